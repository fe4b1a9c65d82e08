/** Default replicas and threads by engine and cores (src/engines/manifest.ts). */
import { describe, expect, it } from 'vitest';
import { adaptsRunWidth, defaultIntraOpThreads, defaultReplicas } from '../../../src/engines/manifest.js';

describe('default model layout', () => {
  it('gives speech recognition a replica per core when replicas share weights, each as wide as the machine', () => {
    for (const cores of [1, 2, 4, 16, 64]) {
      const replicas = defaultReplicas('ctc-wav2vec2', cores, 16, true);
      expect(replicas).toBe(Math.min(16, cores));
      const adaptive = adaptsRunWidth('ctc-wav2vec2', replicas, true);
      expect(adaptive).toBe(replicas > 1);
      expect(defaultIntraOpThreads('ctc-wav2vec2', replicas, cores, adaptive)).toBe(adaptive ? cores : Math.max(1, Math.floor(cores / replicas)));
    }
  });

  it('keeps the big models few and the cores split among them when weights are not shared, and translation always', () => {
    expect(defaultReplicas('ctc-wav2vec2', 8, 16, false)).toBe(2);
    expect(adaptsRunWidth('ctc-wav2vec2', 2, false)).toBe(false);
    expect(defaultIntraOpThreads('ctc-wav2vec2', 2, 8, false)).toBe(4);
    expect(defaultReplicas('nllb', 8, 16, true)).toBe(2);
    expect(adaptsRunWidth('nllb', 2, true)).toBe(false);
    expect(defaultIntraOpThreads('nllb', 2, 8)).toBe(4);
  });

  it('one replica per core for speech, one for the VAD, and never more than the cap', () => {
    expect(defaultReplicas('vits-hf', 4)).toBe(4);
    expect(defaultReplicas('silero-vad', 8)).toBe(1);
    expect(defaultReplicas('whisper', 32, 8, true)).toBe(8);
    expect(defaultIntraOpThreads('vits-hf', 4, 4)).toBe(1);
  });
});
