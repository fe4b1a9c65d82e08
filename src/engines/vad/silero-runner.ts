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

const OptionsSchema = z.object({ file: z.string().optional() }).passthrough();

const DetectInput = z.object({
  samples: z.instanceof(Float32Array),
  threshold: z.number().min(0.01).max(0.99).optional(),
  minSpeechMs: z.number().min(0).optional(),
  minSilenceMs: z.number().min(0).optional(),
  speechPadMs: z.number().min(0).optional(),
});

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
      if (method === 'probabilities') return vad.probabilities(DetectInput.parse(input).samples, ctx.checkpoint);
      throw new UnknownMethodError('silero-vad', method);
    },
    close: () => vad.close(),
  };
};
