import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';

describe('loadConfig', () => {
  it('has working defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 8080, vendor: 'djelia', retirementDate: '2026-09-20', dbPath: 'data/kuma.sqlite' });
    expect(config.prices).toEqual({ transcriptionPerSecond: 100, translationPerCharacter: 20, translationPerToken: 60, speechPerCharacter: 15 });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads KUMA_* variables and price overrides', () => {
    const config = loadConfig({ PORT: '9000', KUMA_RETIREMENT_DATE: '2027-01-01', KUMA_PRICE_SPEECH_PER_CHARACTER: '7' });
    expect(config.port).toBe(9000);
    expect(config.retirementDate).toBe('2027-01-01');
    expect(config.prices.speechPerCharacter).toBe(7);
    expect(config.prices.transcriptionPerSecond).toBe(100);
  });

  it('stops with a message naming the variable when a value is invalid', () => {
    expect(() => loadConfig({ KUMA_PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ KUMA_PORT: '70000' })).toThrow(/port \(KUMA_PORT\)/);
    expect(() => loadConfig({ KUMA_RETIREMENT_DATE: 'soon' })).toThrow(/KUMA_RETIREMENT_DATE/);
    expect(() => loadConfig({ KUMA_PRICE_TRANSCRIPTION_PER_SECOND: '-1' })).toThrow(/KUMA_PRICE_TRANSCRIPTION_PER_SECOND/);
  });

  it('takes a postgres:// or postgresql:// KUMA_DATABASE_URL and refuses anything else, naming the variable', () => {
    expect(loadConfig({}).databaseUrl).toBe('');
    expect(loadConfig({ KUMA_DATABASE_URL: 'postgres://kuma:pw@db:5432/kuma' }).databaseUrl).toBe('postgres://kuma:pw@db:5432/kuma');
    expect(loadConfig({ KUMA_DATABASE_URL: 'postgresql://kuma@/kuma?host=/run/postgresql' }).databaseUrl).toMatch(/^postgresql:/);
    expect(() => loadConfig({ KUMA_DATABASE_URL: 'mysql://kuma@db/kuma' })).toThrow(
      /databaseUrl \(KUMA_DATABASE_URL\): must be a postgres:\/\/ or postgresql:\/\/ URL/,
    );
    expect(() => loadConfig({ KUMA_DATABASE_URL: 'db.internal:5432' })).toThrow(/KUMA_DATABASE_URL/);
  });

  it('reads KUMA_ENGINE_EXECUTION_PROVIDERS as a list: trimmed, lower-cased, each name once; unset = none (the CPU)', () => {
    expect(loadConfig({}).engineExecutionProviders).toEqual([]);
    expect(loadConfig({ KUMA_ENGINE_EXECUTION_PROVIDERS: ' CUDA, cpu,,cuda ' }).engineExecutionProviders).toEqual(['cuda', 'cpu']);
  });
});
