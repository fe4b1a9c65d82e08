/** Which niceness a model's threads get: the entry's own, else KUMA_ENGINE_NICENESS, except the VAD and TTS (0). */
import { describe, expect, it } from 'vitest';
import { ModelEntrySchema, defaultNiceness, ENGINE_TYPES } from '../../../src/engines/manifest.js';

describe('defaultNiceness', () => {
  it('gives the VAD and the TTS engines 0 and every other engine the configured niceness', () => {
    const unniced = new Set(['silero-vad', 'vits-hf', 'vits-sherpa', 'vits-piper']);
    for (const engine of ENGINE_TYPES) expect(defaultNiceness(engine, 7)).toBe(unniced.has(engine) ? 0 : 7);
    expect(defaultNiceness('ctc-wav2vec2')).toBe(10);
    expect(defaultNiceness('vits-hf')).toBe(0);
  });

  it('takes a niceness of 0–19 on a manifest entry and refuses others', () => {
    const entry = { id: 'm', engine: 'ctc-wav2vec2', dir: 'x' };
    expect(ModelEntrySchema.parse({ ...entry, niceness: 19 }).niceness).toBe(19);
    expect(ModelEntrySchema.parse(entry).niceness).toBeUndefined();
    for (const niceness of [-1, 20, 1.5]) expect(ModelEntrySchema.safeParse({ ...entry, niceness }).success).toBe(false);
  });
});
