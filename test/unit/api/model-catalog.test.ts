import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../../../src/api/model-catalog.js';

describe('ModelCatalog', () => {
  const at = (iso: string, vendor = 'djelia') => new ModelCatalog(vendor, '2026-09-20', () => new Date(iso));

  it('serves legacy ids through 19 September and retires them on the 20th (UTC)', () => {
    expect(at('2026-09-19T23:59:59.999Z').resolve('djelia-tts-v2')).toMatchObject({ id: 'djelia-tts-v2', legacy: true });
    expect(at('2026-09-20T00:00:00.000Z').resolve('djelia-tts-v2')).toBeUndefined();
    expect(
      at('2026-09-20T00:00:00.000Z')
        .list()
        .map((m) => m.id),
    ).toEqual(['sunjata-1', 'jifili-1', 'banjugu-1']);
  });

  it('aliases keep resolving after the retirement date and report the canonical id', () => {
    const catalog = at('2027-01-01T00:00:00Z');
    for (const [alias, id] of [
      ['djelia-asr-v3', 'sunjata-1'],
      ['gpt-4o-mini-transcribe', 'sunjata-1'],
      ['gpt-4o-mini-tts', 'jifili-1'],
      ['djelia-tts-v3', 'jifili-1'],
      ['djelia-translate-v1', 'banjugu-1'],
    ]) {
      expect(catalog.resolve(alias!)?.id).toBe(id);
    }
  });

  it('takes the vendor name from configuration', () => {
    const catalog = at('2026-01-01T00:00:00Z', 'acme');
    expect(catalog.resolve('acme-asr-v1')?.capability).toBe('transcription');
    expect(catalog.resolve('djelia-asr-v1')).toBeUndefined();
    expect(catalog.toObject(catalog.resolve('tts-1')!)).toEqual({ id: 'jifili-1', object: 'model', created: 1735689600, owned_by: 'acme' });
  });

  it('knows nothing of unknown ids', () => {
    expect(at('2026-01-01T00:00:00Z').resolve('gpt-4')).toBeUndefined();
  });
});
