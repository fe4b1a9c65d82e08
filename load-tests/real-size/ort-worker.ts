/**
 * A worker thread running raw onnxruntime-node on one model file: the "model-only" side of the real-size
 * benchmarks (no Kuma code between the job and session.run). Jobs are posted as { id, seconds } and answered
 * { id, ms } once the model ran on that much (16 kHz) audio; the input is made once per length and reused.
 */
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';

export interface OrtWorkerData {
  file: string;
  intraOpThreads: number;
  allowSpinning: boolean;
  /** `wav2vec2` feeds input_values [1,N]; `nemo` feeds a [1,mels,frames] log-mel-shaped input and its length. */
  layout: 'wav2vec2' | 'nemo';
  mels?: number;
}

const data = workerData as OrtWorkerData;
const session = await ort.InferenceSession.create(data.file, {
  intraOpNumThreads: data.intraOpThreads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  extra: { session: { intra_op: { allow_spinning: data.allowSpinning ? '1' : '0' } } },
});
const inputs = new Map<number, Record<string, ort.Tensor>>();

function feeds(seconds: number): Record<string, ort.Tensor> {
  let made = inputs.get(seconds);
  if (made) return made;
  if (data.layout === 'wav2vec2') {
    const n = Math.round(seconds * 16000);
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = Math.sin(i / 9) * 0.3 + ((i * 7919) % 1000) / 10000;
    made = { input_values: new ort.Tensor('float32', x, [1, n]) };
  } else {
    const frames = Math.round(seconds * 100);
    const mels = data.mels ?? 64;
    made = {
      audio_signal: new ort.Tensor('float32', new Float32Array(mels * frames).fill(0.1), [1, mels, frames]),
      length: new ort.Tensor('int64', BigInt64Array.from([BigInt(frames)]), [1]),
    };
  }
  inputs.set(seconds, made);
  return made;
}

parentPort!.on('message', async (job: { id: number; seconds: number }) => {
  const t0 = performance.now();
  await session.run(feeds(job.seconds));
  parentPort!.postMessage({ id: job.id, ms: performance.now() - t0 });
});
parentPort!.postMessage({ ready: true });
