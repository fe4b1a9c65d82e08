/**
 * Worker-thread side of the encoder pool: holds the streaming encoders of the streams pinned to this
 * thread and runs their push/flush calls with the same in-thread encoders the main thread would use
 * (createInThreadEncoder), so the bytes are the same. Each stream's requests run one after another in
 * the order they came; different streams' requests interleave only where an encoder awaits (the pool
 * sends at most a couple of requests at a time, in the order its scheduler chose).
 *
 * Output bytes are transferred back, not copied. Every request but `close` is answered exactly once.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createInThreadEncoder } from '../encoders/in-thread.js';
import type { StreamingEncoder } from '../types.js';
import { errorData, transferable, type PoolRequest, type WorkerData, type WorkerReply } from './protocol.js';

const port = parentPort;
if (!port) throw new Error('encoder-worker.ts must run in a worker thread (see EncoderPool)');

interface Stream {
  encoder: StreamingEncoder | undefined;
  /** The stream's requests, chained so that they run in order even when one awaits. */
  chain: Promise<void>;
  closed: boolean;
}

const streams = new Map<number, Stream>();
const EMPTY = new Uint8Array(0);

function post(reply: WorkerReply, transfer: ArrayBuffer[] = []): void {
  try {
    port!.postMessage(reply, transfer);
  } catch {
    // A buffer that cannot be transferred (WASM memory, Node's pooled Buffer memory): send it cloned.
    port!.postMessage(reply);
  }
}

async function handle(stream: Stream, request: Exclude<PoolRequest, { type: 'stats' }>): Promise<void> {
  if (request.type === 'close') {
    stream.closed = true;
    stream.encoder?.close();
    streams.delete(request.stream);
    return;
  }
  const { seq } = request;
  try {
    let bytes: Uint8Array = EMPTY;
    if (request.type === 'open') {
      const encoder = await createInThreadEncoder(request.format, { inputRate: request.inputRate, ...(request.variant ? { variant: request.variant } : {}) });
      // Closed while it was being created: nobody will use it.
      if (stream.closed) encoder.close();
      else stream.encoder = encoder;
    } else {
      if (!stream.encoder) throw new Error('encoder stream is not open');
      bytes = request.type === 'push' ? await stream.encoder.push(request.samples) : await stream.encoder.flush();
      // A flushed encoder has released its codec; only the map entry is left to drop.
      if (request.type === 'flush') streams.delete(request.stream);
    }
    const { value, transfer } = transferable(bytes);
    post({ type: 'done', stream: request.stream, seq, bytes: value }, transfer);
  } catch (error) {
    // The encoder released itself on failure (the StreamingEncoder contract); forget the stream.
    streams.delete(request.stream);
    post({ type: 'failed', stream: request.stream, seq, error: errorData(error) });
  }
}

port.on('message', (request: PoolRequest) => {
  if (request.type === 'stats') {
    post({ type: 'stats', seq: request.seq, openEncoders: streams.size });
    return;
  }
  let stream = streams.get(request.stream);
  if (!stream) {
    if (request.type === 'close') return; // already flushed, failed or closed
    stream = { encoder: undefined, chain: Promise.resolve(), closed: false };
    streams.set(request.stream, stream);
  }
  const current = stream;
  current.chain = current.chain.then(() => handle(current, request));
});

/**
 * Loads the codecs before taking requests (WASM compile, the first instance's memory: ≈ 15–35 ms for LAME),
 * so that this happens when the pool starts, not on a stream's path to its first bytes. A codec that fails
 * to load here is not fatal: the stream that needs it gets the error.
 */
async function warmUp(): Promise<void> {
  const { warmFormats } = (workerData ?? { warmFormats: [] }) as WorkerData;
  for (const format of warmFormats) {
    try {
      (await createInThreadEncoder(format, { inputRate: 24000 })).close();
    } catch {
      // reported to the first stream of this format instead
    }
  }
}

void warmUp().then(() => post({ type: 'ready' }));
