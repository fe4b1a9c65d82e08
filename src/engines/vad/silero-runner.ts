/**
 * The `silero-vad` engine: Silero VAD as a standalone model (for streaming sessions and for callers that
 * only need speech regions). The model file is `options.file` in the model directory, or the one shipped
 * in @ricky0123/vad-web.
 */
import path from 'node:path';
import { z } from 'zod';
import type { RunnerFactory } from '../runner.js';
import { UnknownMethodError } from '../runner.js';
import { DEFAULT_VAD_OPTIONS, SileroVad, VAD_SAMPLE_RATE, defaultSileroFile } from './silero-vad.js';
import { VAD_STATE, vadGeometry, type VadBatch } from './silero-batch.js';

const OptionsSchema = z.object({ file: z.string().optional() }).passthrough();

const DetectInput = z.object({
  samples: z.instanceof(Float32Array),
  threshold: z.number().min(0.01).max(0.99).optional(),
  minSpeechMs: z.number().min(0).optional(),
  minSilenceMs: z.number().min(0).optional(),
  speechPadMs: z.number().min(0).optional(),
});

/** `scoreBatch`: the pending windows of many realtime streams, scored in one job (silero-batch.ts). */
const BatchInput = z
  .object({
    counts: z.instanceof(Int32Array),
    states: z.instanceof(Float32Array),
    contexts: z.instanceof(Float32Array),
    histories: z.instanceof(Float32Array).optional(),
    lastProbs: z.instanceof(Float32Array),
    quiet: z.instanceof(Uint8Array),
    samples: z.instanceof(Float32Array),
    floorRms: z.number().min(0),
    maxRows: z.number().int().min(1).optional(),
    rate: z.union([z.literal(16000), z.literal(8000)]).optional(),
  })
  .refine((b) => {
    const { context, history } = vadGeometry(b.rate ?? 16000);
    return (
      b.states.length === b.counts.length * VAD_STATE &&
      b.contexts.length === b.counts.length * context &&
      (b.histories?.length ?? 0) === b.counts.length * history
    );
  }, 'carry arrays do not match counts and rate')
  .refine((b) => b.lastProbs.length === b.counts.length && b.quiet.length === b.counts.length, 'carry arrays do not match counts');

export const createSileroRunner: RunnerFactory = async ({ entry, dir, intraOpThreads, interOpThreads }) => {
  const options = OptionsSchema.parse(entry.options);
  const file = options.file ? path.resolve(dir, options.file) : defaultSileroFile();
  const vad = await SileroVad.load({ intraOpThreads, interOpThreads }, file);
  return {
    info: () => ({ engine: 'silero-vad', sampleRate: VAD_SAMPLE_RATE, file: path.basename(file) }),
    warmup: async () => {
      await vad.probabilities(new Float32Array(VAD_SAMPLE_RATE / 2));
    },
    call(method, input, ctx) {
      if (method === 'detect') {
        const { samples, ...overrides } = DetectInput.parse(input);
        return vad.detect(samples, { ...DEFAULT_VAD_OPTIONS, ...overrides }, ctx.checkpoint);
      }
      if (method === 'scoreBatch') return vad.scoreBatch(BatchInput.parse(input) as VadBatch, ctx.checkpoint);
      if (method === 'probabilities') return vad.probabilities(DetectInput.parse(input).samples, ctx.checkpoint);
      throw new UnknownMethodError('silero-vad', method);
    },
    close: () => vad.close(),
  };
};
