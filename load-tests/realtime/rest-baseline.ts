/**
 * The REST comparison of load-tests/realtime: the same audio as one WAV upload per client per cycle, each
 * client starting at its own offset, so the server sees the same rate of turns as the realtime sessions.
 */
export interface RestPaceOptions {
  url: string;
  apiKey: string;
  clients: number;
  /** s16le mono at `rate`: one cycle of the realtime sessions' audio. */
  pcm: Buffer;
  rate: number;
  cycleSeconds: number;
  seconds: number;
  text: string;
}

function wav(pcm: Buffer, rate: number): Buffer {
  const h = Buffer.alloc(44);
  (h.write('RIFF', 0), h.writeUInt32LE(36 + pcm.length, 4), h.write('WAVEfmt ', 8), h.writeUInt32LE(16, 16), h.writeUInt16LE(1, 20), h.writeUInt16LE(1, 22));
  (h.writeUInt32LE(rate, 24),
    h.writeUInt32LE(rate * 2, 28),
    h.writeUInt16LE(2, 32),
    h.writeUInt16LE(16, 34),
    h.write('data', 36),
    h.writeUInt32LE(pcm.length, 40));
  return Buffer.concat([h, pcm]);
}

export async function restAtPace(options: RestPaceOptions): Promise<{ latencies: number[]; failures: number }> {
  const body = new Blob([wav(options.pcm, options.rate)]);
  const latencies: number[] = [];
  let failures = 0;
  const end = performance.now() + options.seconds * 1000;
  const cycleMs = options.cycleSeconds * 1000;

  async function client(index: number): Promise<void> {
    let due = performance.now() + (index / options.clients) * cycleMs;
    while (due < end) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
      const form = new FormData();
      form.append('file', body, 'speech.wav');
      form.append('model', 'sunjata-1');
      const t0 = performance.now();
      try {
        const res = await fetch(options.url, { method: 'POST', headers: { authorization: `Bearer ${options.apiKey}` }, body: form });
        const json = (await res.json()) as { text?: string };
        if (res.status === 200 && json.text === options.text) latencies.push(performance.now() - t0);
        else failures++;
      } catch {
        failures++;
      }
      due += cycleMs;
    }
  }

  await Promise.all(Array.from({ length: options.clients }, (_, i) => client(i)));
  return { latencies, failures };
}
