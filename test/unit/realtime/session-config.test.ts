/**
 * A realtime session's translation target set by name (SessionUpdate.translationTarget, what a phone call's
 * app language sets): it becomes the target whatever the session was configured with, null turns translation
 * off, and the source-language hint (`language`, echoed to clients) is left as it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyUpdate, DEFAULT_FORMAT, type SessionConfig, type TranslationTarget } from '../../../src/realtime/session-config.js';

const targets = fc.constantFrom<TranslationTarget | null>('fra_Latn', 'eng_Latn', null);
const configs = fc.record({
  language: fc.constantFrom(null, 'bam', 'en', 'fra_Latn', 'eng_Latn'),
  target: targets,
  translationModel: fc.constantFrom(undefined, null, 'banjugu-1'),
});

describe('applyUpdate: translationTarget', () => {
  it('sets the target, and only the target, for any earlier configuration', () => {
    fc.assert(
      fc.property(configs, targets, (earlier, target) => {
        const config: SessionConfig = { format: DEFAULT_FORMAT, model: null, prompt: null, turnDetection: null, ...earlier };
        const next = applyUpdate(config, { translationTarget: target });
        expect(next.target).toBe(target);
        expect(next.language).toBe(config.language);
        expect(next.translationModel).toBe(config.translationModel);
      }),
    );
  });

  it('wins over a target that `language` names in the same update', () => {
    const config: SessionConfig = { format: DEFAULT_FORMAT, model: null, language: null, prompt: null, target: null, turnDetection: null };
    expect(applyUpdate(config, { language: 'fra_Latn', translationTarget: 'eng_Latn' }).target).toBe('eng_Latn');
    expect(applyUpdate(config, { language: 'fra_Latn', translationTarget: null }).target).toBeNull();
  });
});
