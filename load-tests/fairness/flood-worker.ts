/**
 * Account A's flooding clients for load-tests/fairness, in a worker thread of their own: A's readers take
 * megabytes of PCM per request, and on the measuring thread that reading would delay B's own client (its
 * timers and socket reads) — a cost of the load generator, not of the server under test. Here they share
 * the CPU with B's client as separate machines' clients would share the network, but not its event loop.
 *
 * workerData: { url, apiKey, input, clients }. Message 'stop' ends the loops; the worker then posts the
 * number of requests served and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { RawHttpClient } from '../raw-http-client.js';

const { url, apiKey, input, clients, raw } = workerData as { url: string; apiKey: string; input: string; clients: number; raw?: boolean };
let flooding = true;
let served = 0;

/** With `raw`, each client drains its responses through a lean socket reader instead of fetch (raw-http-client.ts). */
async function rawClient(): Promise<void> {
  const target = new URL(url);
  const http = new RawHttpClient(target.hostname, Number(target.port));
  const request = {
    path: target.pathname,
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input, response_format: 'pcm' }),
  };
  try {
    while (flooding) {
      const { status } = await http.post(request);
      if (status !== 200) throw new Error(`A: HTTP ${status}`);
      served++;
    }
  } finally {
    http.close();
  }
}

async function client(): Promise<void> {
  if (raw) return rawClient();
  while (flooding) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'jifili-1', input, response_format: 'pcm' }),
    });
    if (res.status !== 200) throw new Error(`A: HTTP ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    served++;
  }
}

const loops = Array.from({ length: clients }, client);
parentPort!.once('message', () => {
  flooding = false;
  void Promise.all(loops).then(
    () => parentPort!.postMessage({ served }),
    (err: Error) => parentPort!.postMessage({ served, error: err.message }),
  );
});
