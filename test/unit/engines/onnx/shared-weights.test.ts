/**
 * sharedWeightsFile: a model at or above the size bound is written once with its weights in an external data
 * file (which onnxruntime maps, so replicas share the pages), concurrent callers wait for the one writer and
 * get the same file, and a session of that file gives the source model's outputs; a smaller model loads as it is.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import { sharedWeightsFile } from '../../../../src/engines/onnx/shared-weights.js';

const source = path.resolve('models/demo/ctc-wav2vec2/model.onnx');
const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-weights-'));
afterAll(() => fs.rmSync(cacheDir, { recursive: true, force: true }));

async function logits(file: string, prepack: boolean): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(file, { extra: { session: { disable_prepacking: prepack ? '0' : '1' } } });
  const x = Float32Array.from({ length: 16000 }, (_, i) => Math.sin(i / 11) * 0.3);
  const out = await session.run({ input_values: new ort.Tensor('float32', x, [1, x.length]) });
  await session.release();
  return out.logits!.data as Float32Array;
}

describe('sharedWeightsFile', () => {
  it('writes one external-weights copy for concurrent callers, and its session answers as the source does', async () => {
    const results = await Promise.all([0, 1, 2].map(() => sharedWeightsFile(source, { cacheDir, minBytes: 0 })));
    expect(new Set(results.map((r) => r.file)).size).toBe(1);
    expect(results.every((r) => r.shared)).toBe(true);
    const file = results[0]!.file;
    expect(fs.existsSync(`${file}.data`)).toBe(true);
    expect(fs.readdirSync(cacheDir).filter((f) => f.endsWith('.lock'))).toEqual([]);
    const [expected, got] = await Promise.all([logits(source, true), logits(file, false)]);
    expect(got.length).toBe(expected.length);
    for (let i = 0; i < got.length; i++) expect(got[i]).toBeCloseTo(expected[i]!, 4);
  });

  it('loads a model under the size bound as it is', async () => {
    expect(await sharedWeightsFile(source, { cacheDir, minBytes: 1 << 30 })).toEqual({ file: source, shared: false });
  });
});
