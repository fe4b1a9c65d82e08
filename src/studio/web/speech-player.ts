/**
 * Plays speech while it is still streaming in, and reports when sound started and when the response ended,
 * so the page (and its browser test) can show that playback began before the server finished:
 * - mp3 through MediaSource into the <audio> element (its `playing` event);
 * - pcm (24 kHz s16le) through the `kuma-playback` worklet (its first non-silent render quantum);
 * - other formats are played once complete (a blob URL).
 */
import { pageSetting } from './dom.js';

/** Milestones in ms since the request was sent (performance.now() based); each is set once, and reported. */
export class PlaybackTimes {
  firstByteMs: number | null = null;
  playingMs: number | null = null;
  responseEndMs: number | null = null;

  constructor(
    private readonly t0: number,
    private readonly report: (times: PlaybackTimes) => void,
  ) {}

  mark(milestone: 'firstByteMs' | 'playingMs' | 'responseEndMs'): void {
    if (this[milestone] !== null) return;
    this[milestone] = performance.now() - this.t0;
    this.report(this);
  }
}

export type ChunkSource = AsyncIterable<Uint8Array<ArrayBuffer>>;

export async function* chunksOf(response: Response): ChunkSource {
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    if (value?.length) yield value;
  }
}

/** mp3 via MediaSource: each chunk is appended as it arrives; play() is called on the first. */
export async function playMp3(audio: HTMLAudioElement, chunks: ChunkSource, times: PlaybackTimes): Promise<void> {
  const media = new MediaSource();
  audio.src = URL.createObjectURL(media);
  await new Promise((resolve) => media.addEventListener('sourceopen', resolve, { once: true }));
  const buffer = media.addSourceBuffer('audio/mpeg');
  const appended = () => new Promise((resolve) => buffer.addEventListener('updateend', resolve, { once: true }));
  audio.addEventListener('playing', () => times.mark('playingMs'), { once: true });
  let started = false;
  for await (const chunk of chunks) {
    times.mark('firstByteMs');
    buffer.appendBuffer(chunk);
    await appended();
    if (!started) {
      started = true;
      void audio.play().catch(() => undefined);
    }
  }
  times.mark('responseEndMs');
  if (media.readyState === 'open') media.endOfStream();
}

/** 24 kHz pcm16 via the playback worklet; a sample split across two chunks is carried over. */
export async function playPcm(chunks: ChunkSource, times: PlaybackTimes): Promise<void> {
  const context = new AudioContext({ sampleRate: 24_000 });
  await context.audioWorklet.addModule(pageSetting('worklet'));
  const node = new AudioWorkletNode(context, 'kuma-playback', { numberOfInputs: 0, outputChannelCount: [1] });
  node.connect(context.destination);
  const ended = new Promise<void>((resolve) => {
    node.port.onmessage = (event: MessageEvent<string>) => {
      if (event.data === 'playing') times.mark('playingMs');
      if (event.data === 'ended') resolve();
    };
  });
  await context.resume();
  let carry: number | null = null;
  for await (const chunk of chunks) {
    times.mark('firstByteMs');
    const bytes: Uint8Array = carry === null ? chunk : prepend(carry, chunk);
    const count = bytes.length >> 1;
    const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
    const samples = new Float32Array(count);
    for (let i = 0; i < count; i++) samples[i] = view.getInt16(i * 2, true) / 0x8000;
    carry = bytes.length % 2 ? bytes[bytes.length - 1]! : null;
    node.port.postMessage(samples, [samples.buffer]);
  }
  times.mark('responseEndMs');
  node.port.postMessage('end');
  await ended;
  await context.close();
}

function prepend(byte: number, chunk: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(chunk.length + 1);
  joined[0] = byte;
  joined.set(chunk, 1);
  return joined;
}

/** Any other format: played when the whole file is here. */
export async function playWhole(audio: HTMLAudioElement, chunks: ChunkSource, type: string, times: PlaybackTimes): Promise<void> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) {
    times.mark('firstByteMs');
    parts.push(chunk);
  }
  times.mark('responseEndMs');
  audio.addEventListener('playing', () => times.mark('playingMs'), { once: true });
  audio.src = URL.createObjectURL(new Blob(parts as BlobPart[], { type }));
  await audio.play();
}
