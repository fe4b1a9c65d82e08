/**
 * Hostile and broken uploads: nothing, random bytes, files of every format cut short, WAV headers that
 * lie, and a seeded mutation fuzz over every format's decoder, run through the DecoderPool with a short
 * timeout so that a hang shows up as 'timeout' instead of stalling the suite. The rule under test: the
 * only thing that ever comes out is a decoded result with finite samples or an AudioDecodeError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { DecoderPool } from '../../../src/codecs/decode/decoder-pool.js';
import { AudioDecodeError, type DecodedAudio } from '../../../src/codecs/types.js';
import { FFMPEG_FORMATS, type UploadFormat } from './helpers/ffmpeg.js';
import { prng, speechLike } from './helpers/signals.js';

/** One producer per distinct decoder path (WAV variants share a parser, so two of them suffice). */
const FUZZED = FFMPEG_FORMATS.filter((f) => !['wav s24', 'wav s32', 'wav f32', 'wav A-law', 'rf64 s16'].includes(f.name));
const MUTATIONS_PER_FORMAT = 250;
const FUZZ_TIMEOUT_MS = 2000;

const samples: Map<string, Uint8Array> = new Map();
const sampleOf = (f: UploadFormat): Uint8Array => samples.get(f.name)!;

beforeAll(async () => {
  const input = [speechLike(16000, 0.4, { seed: 3 })];
  await Promise.all(FFMPEG_FORMATS.map(async (f) => samples.set(f.name, await f.encode(input, 16000))));
});

type Outcome = { ok: DecodedAudio } | { error: unknown };
const attempt = (p: Promise<DecodedAudio>): Promise<Outcome> =>
  p.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error }),
  );

/** The invariant: a clean result (finite samples at the asked rate) or a typed error, nothing else. */
function expectCleanOutcome(outcome: Outcome, context: string): void {
  if ('ok' in outcome) {
    expect(outcome.ok.sampleRate, context).toBe(16000);
    expect(outcome.ok.samples.length, context).toBeGreaterThan(0);
    expect(outcome.ok.samples.every(Number.isFinite), context).toBe(true);
  } else {
    expect(outcome.error, `${context}: ${String(outcome.error)}`).toBeInstanceOf(AudioDecodeError);
  }
}

describe('bad input: nothing and noise', () => {
  it('answers empty for zero bytes', async () => {
    await expect(decodeAudio(new Uint8Array(0), { targetRate: 16000 })).rejects.toMatchObject({ kind: 'empty' });
  });

  it('answers unsupported for random bytes, whatever name the client gave the file', async () => {
    // Names never reach the decoder: detection is from bytes, so "speech.mp3" full of noise is noise.
    const random = prng(9);
    for (let i = 0; i < 50; i++) {
      const bytes = Uint8Array.from({ length: 100 + i * 97 }, () => Math.floor(random() * 256));
      await expect(decodeAudio(bytes, { targetRate: 16000 })).rejects.toMatchObject({ kind: 'unsupported' });
    }
  });

  it('answers unsupported for text and for an audio magic number followed by nothing', async () => {
    await expect(decodeAudio(new TextEncoder().encode('{"audio": "data"}'), { targetRate: 16000 })).rejects.toMatchObject({ kind: 'unsupported' });
    for (const magic of ['OggS', 'fLaC', 'RIFF']) {
      const outcome = await attempt(decodeAudio(new TextEncoder().encode(magic), { targetRate: 16000 }));
      expectCleanOutcome(outcome, magic);
      expect('ok' in outcome).toBe(false);
    }
  });
});

describe('bad input: truncated files', () => {
  const cuts = (n: number) => [1, 4, 8, 12, 16, 24, 36, 44, 60, 100, 200, Math.floor(n * 0.25), Math.floor(n * 0.5), Math.floor(n * 0.9), n - 1];

  it.each(FFMPEG_FORMATS.map((f) => [f.name, f] as const))('%s cut at 15 points gives audio or a typed error', async (_name, format) => {
    const whole = sampleOf(format);
    const kinds = new Set<string>();
    for (const cut of cuts(whole.length).filter((c) => c > 0 && c < whole.length)) {
      const outcome = await attempt(decodeAudio(whole.slice(0, cut), { targetRate: 16000 }));
      expectCleanOutcome(outcome, `${format.name} cut at ${cut}/${whole.length}`);
      kinds.add('ok' in outcome ? 'ok' : (outcome.error as AudioDecodeError).kind);
    }
    expect(kinds.size).toBeGreaterThan(0);
  });

  it('names the detected format and says truncated when the structure runs past the end', async () => {
    const m4a = sampleOf(FFMPEG_FORMATS.find((f) => f.name === 'm4a aac index at end')!);
    const error = await decodeAudio(m4a.slice(0, Math.floor(m4a.length * 0.8)), { targetRate: 16000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated', message: expect.stringContaining('looks like MP4/M4A') });
  });
});

/** A copy of the s16 WAV sample with its data chunk size (at byte 40 in ffmpeg's bitexact layout) set. */
function wavWithDataSize(size: number, cutTo?: number): Uint8Array {
  const wav = sampleOf(FFMPEG_FORMATS[0]!).slice(0, cutTo);
  expect(String.fromCharCode(...wav.subarray(36, 40))).toBe('data');
  new DataView(wav.buffer).setUint32(40, size, true);
  return wav;
}

describe('bad input: WAV headers that lie', () => {
  const frames = 0.4 * 16000;

  it('decodes what is there when the data size is bigger than the file (an upload cut short)', async () => {
    const d = await decodeAudio(wavWithDataSize(frames * 2, 44 + 3001), { targetRate: 16000 }); // cut mid-sample
    expect(d.samples.length).toBe(1500);
    const huge = await decodeAudio(wavWithDataSize(0x7fffffff), { targetRate: 16000 });
    expect(huge.samples.length).toBe(frames);
  });

  it('stops at the declared size when the file holds more (trailing chunks or junk)', async () => {
    const d = await decodeAudio(wavWithDataSize(2000), { targetRate: 16000 });
    expect(d.samples.length).toBe(1000);
  });

  it('refuses a block size, channel count or rate that contradicts itself', async () => {
    const patch = (at: number, value: number, bytes: 2 | 4) => {
      const wav = sampleOf(FFMPEG_FORMATS[0]!).slice();
      const v = new DataView(wav.buffer);
      if (bytes === 2) v.setUint16(at, value, true);
      else v.setUint32(at, value, true);
      return decodeAudio(wav, { targetRate: 16000 });
    };
    await expect(patch(32, 0, 2)).rejects.toMatchObject({ kind: 'corrupt', message: expect.stringContaining('block size') });
    await expect(patch(22, 0, 2)).rejects.toMatchObject({ kind: 'corrupt' });
    await expect(patch(24, 0, 4)).rejects.toMatchObject({ kind: 'unsupported', message: expect.stringContaining('sample rate') });
  });

  it('calls a header with no data chunk truncated, and NaN float samples corrupt', async () => {
    await expect(decodeAudio(sampleOf(FFMPEG_FORMATS[0]!).slice(0, 30), { targetRate: 16000 })).rejects.toMatchObject({ kind: 'truncated' });
    const f32 = sampleOf(FFMPEG_FORMATS.find((f) => f.name === 'wav f32')!).slice();
    f32.fill(0xff, f32.length - 400);
    await expect(decodeAudio(f32, { targetRate: 16000 })).rejects.toMatchObject({ kind: 'corrupt', message: expect.stringContaining('finite') });
  });
});

describe('bad input: MP4 boxes that would make the demuxer allocate or loop without end', () => {
  // audio-decode's MP4 demuxer allocates by these counts; before mp4-guard.ts a 5 KB file ran V8 out of
  // memory, which kills the whole process, worker thread or not. Run through a pool so that a regression
  // shows as 'timeout' here instead of taking the test runner down.
  const pool = new DecoderPool({ size: 1, timeoutMs: 5000 });
  afterAll(() => pool.close());

  /** The named m4a sample with 32-bit fields of box `type`'s body set: [offset in the body, value]. */
  const patched = (name: string, type: string, fields: [number, number][]): Uint8Array => {
    const m4a = sampleOf(FFMPEG_FORMATS.find((f) => f.name === name)!).slice();
    const body = Buffer.from(m4a).indexOf(type, 0, 'latin1') + 4;
    expect(body).toBeGreaterThan(4);
    for (const [offset, value] of fields) new DataView(m4a.buffer).setUint32(body + offset, value);
    return m4a;
  };

  it.each([
    [
      'stsz with one size for 4 billion samples',
      'm4a aac faststart',
      'stsz',
      [
        [4, 1024],
        [8, 0xf000_0000],
      ],
    ],
    [
      'stsz with a 2^30-entry table',
      'm4a aac faststart',
      'stsz',
      [
        [4, 0],
        [8, 0x4000_0000],
      ],
    ],
    ['stco', 'm4a aac faststart', 'stco', [[4, 0xffff_fff0]]],
    ['stsc', 'm4a aac index at end', 'stsc', [[4, 0x8000_0000]]],
    ['elst', 'm4a aac faststart', 'elst', [[4, 0xf200_0001]]],
    ['trun', 'm4a aac fragmented', 'trun', [[4, 0xffff_ffff]]],
  ] as const)('refuses a lying %s count as corrupt, fast', async (_label, name, type, fields) => {
    const bytes = patched(
      name,
      type,
      fields.map(([o, v]) => [o, v]),
    );
    await expect(pool.decode(bytes, { targetRate: 16000 })).rejects.toMatchObject({ kind: 'corrupt', message: expect.stringContaining(type) });
  });

  it('refuses a top-level box whose 64-bit size is 0, on which the demuxer would spin forever', async () => {
    const fragmented = sampleOf(FFMPEG_FORMATS.find((f) => f.name === 'm4a aac fragmented')!);
    const spin = new Uint8Array(fragmented.length + 16);
    spin.set(fragmented);
    spin.set([0, 0, 0, 1, 0x66, 0x72, 0x65, 0x65], fragmented.length); // size 1 = "64-bit size follows", type "free"
    await expect(pool.decode(spin, { targetRate: 16000 })).rejects.toMatchObject({ kind: 'corrupt', message: expect.stringContaining('64-bit size') });
  });
});

type Mutation = (b: Uint8Array, random: () => number) => Uint8Array;
const pick = (random: () => number, n: number) => Math.floor(random() * n);

const MUTATIONS: Record<string, Mutation> = {
  /** Overwrites 1–8 bytes, biased to the first 256 where headers live. */
  flip: (b, random) => {
    const out = b.slice();
    for (let k = 1 + pick(random, 8); k > 0; k--) out[random() < 0.5 ? pick(random, Math.min(256, b.length)) : pick(random, b.length)] = pick(random, 256);
    return out;
  },
  delete: (b, random) => {
    const at = pick(random, b.length);
    return new Uint8Array([...b.subarray(0, at), ...b.subarray(at + 1 + pick(random, 64))]);
  },
  truncate: (b, random) => b.slice(0, pick(random, b.length)),
  duplicate: (b, random) => {
    const from = pick(random, b.length);
    const range = b.subarray(from, from + 1 + pick(random, 256));
    const at = pick(random, b.length);
    return new Uint8Array([...b.subarray(0, at), ...range, ...b.subarray(at)]);
  },
};

describe('bad input: mutation fuzz through the DecoderPool', () => {
  const pool = new DecoderPool({ size: 2, timeoutMs: FUZZ_TIMEOUT_MS });
  afterAll(() => pool.close());

  it.each(FUZZED.map((f) => [f.name, f] as const))(
    `%s survives ${MUTATIONS_PER_FORMAT} seeded mutations: audio or a typed error, never a crash`,
    async (name, format) => {
      const random = prng(1234 + name.length * 7919 + name.charCodeAt(0));
      const base = sampleOf(format);
      const names = Object.keys(MUTATIONS);
      const jobs = Array.from({ length: MUTATIONS_PER_FORMAT }, (_, i) => {
        const kind = names[i % names.length]!;
        return { kind, bytes: MUTATIONS[kind]!(base, random) };
      });
      const outcomes = await Promise.all(jobs.map((j) => attempt(pool.decode(j.bytes, { targetRate: 16000, maxDurationSeconds: 30 }))));
      const tally: Record<string, number> = {};
      outcomes.forEach((outcome, i) => {
        expectCleanOutcome(outcome, `${name} mutation #${i} (${jobs[i]!.kind})`);
        const key = 'ok' in outcome ? 'ok' : (outcome.error as AudioDecodeError).kind;
        tally[key] = (tally[key] ?? 0) + 1;
      });
      // The tally is the report: how each decoder fails. A 'timeout' here means a decoder hung on some input.
      console.log(`fuzz ${name}: ${JSON.stringify(tally)}`);
    },
    120_000,
  );
});
