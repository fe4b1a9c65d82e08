/**
 * The speech encoders' settings come from the config like every other setting: read from their KUMA_*
 * variables, with their documented defaults, and a bad value stops the start naming the variable (they used to
 * be read straight from the environment by the codecs, where `KUMA_AAC_POOL_MAX_IDLE=lots` became NaN).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';

describe('encoder settings', () => {
  it('have the README defaults', () => {
    expect(loadConfig({})).toMatchObject({ ffmpegPath: '', aacPoolSize: 2, aacPoolMaxIdle: 64, aacContinuationNiceness: 15 });
  });

  it('are read from KUMA_FFMPEG_PATH, KUMA_AAC_POOL_SIZE, KUMA_AAC_POOL_MAX_IDLE and KUMA_AAC_CONTINUATION_NICENESS', () => {
    const config = loadConfig({
      KUMA_FFMPEG_PATH: '/usr/bin/ffmpeg',
      KUMA_AAC_POOL_SIZE: '0',
      KUMA_AAC_POOL_MAX_IDLE: '8',
      KUMA_AAC_CONTINUATION_NICENESS: '19',
    });
    expect(config).toMatchObject({ ffmpegPath: '/usr/bin/ffmpeg', aacPoolSize: 0, aacPoolMaxIdle: 8, aacContinuationNiceness: 19 });
  });

  it('refuse a bad value by its variable', () => {
    expect(() => loadConfig({ KUMA_AAC_POOL_SIZE: '-1' })).toThrow(/aacPoolSize \(KUMA_AAC_POOL_SIZE\)/);
    expect(() => loadConfig({ KUMA_AAC_POOL_MAX_IDLE: 'lots' })).toThrow(/aacPoolMaxIdle \(KUMA_AAC_POOL_MAX_IDLE\)/);
    expect(() => loadConfig({ KUMA_AAC_CONTINUATION_NICENESS: '20' })).toThrow(/aacContinuationNiceness \(KUMA_AAC_CONTINUATION_NICENESS\)/);
  });
});
