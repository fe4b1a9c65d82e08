/**
 * One fuzz target per upload container the decoders accept (wav, flac, ogg/flac, mp3, ogg/opus,
 * ogg/vorbis, webm, mp4/m4a, adts): mutations of short valid seed files (0.3 s, made by ffmpeg in every
 * variant the container has — WAV s16/μ-law/f32/rf64, MP4 with the index first, last and fragmented…),
 * decoded through the DecoderPool, the same entry the transcription routes use, rather than over HTTP: a
 * decode per case over HTTP would also run the model and not fit the run's time. Errors are classified
 * with src/api/errors.ts toApiError, so the outcome is the status a client would get.
 */
import { toApiError } from '../../src/api/errors.js';
import type { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { AudioDecodeError } from '../../src/codecs/types.js';
import { FFMPEG_FORMATS } from '../../test/unit/codecs/helpers/ffmpeg.js';
import { speechLike } from '../../test/unit/codecs/helpers/signals.js';
import type { Outcome } from './outcomes.js';
import { EDGE_INTS, type Rng } from './rng.js';

export const DECODER_TARGETS = ['wav', 'flac', 'ogg-flac', 'mp3', 'ogg-opus', 'ogg-vorbis', 'webm', 'mp4', 'adts'] as const;
export type DecoderTargetName = (typeof DECODER_TARGETS)[number];

/** Seed files per container, made once per run. */
export async function makeSeeds(): Promise<Map<string, Uint8Array[]>> {
  const input = [speechLike(16000, 0.3, { seed: 5 })];
  const seeds = new Map<string, Uint8Array[]>();
  for (const format of FFMPEG_FORMATS) {
    const bytes = await format.encode(input, 16000);
    seeds.set(format.container, [...(seeds.get(format.container) ?? []), bytes]);
  }
  return seeds;
}

/** Stacked mutations of a seed: bit flips, interesting bytes and integers, cut, duplicated, deleted or spliced ranges. */
export function mutate(rng: Rng, seed: Uint8Array, others: Uint8Array[]): Uint8Array {
  let b = Buffer.from(seed);
  for (let n = rng.int(1, rng.chance(0.2) ? 16 : 4); n > 0; n--) {
    const at = rng.int(0, Math.max(0, b.length - 1));
    switch (rng.int(0, 8)) {
      case 0:
        if (b.length) b[at] = b[at]! ^ (1 << rng.int(0, 7));
        break;
      case 1:
        if (b.length) b[at] = rng.pick([0, 0xff, 0x7f, 0x80, 1]);
        break;
      case 2: {
        // A length/count field: 32 bits, either endianness, an edge value or a small change.
        if (at + 4 > b.length) break;
        const v = rng.chance(0.5) ? Number(rng.pick(EDGE_INTS)) >>> 0 : (b.readUInt32BE(at) + rng.int(-16, 16)) >>> 0;
        if (rng.chance(0.5)) b.writeUInt32BE(v, at);
        else b.writeUInt32LE(v, at);
        break;
      }
      case 3:
        if (at + 2 <= b.length) b.writeUInt16BE(rng.pick([0, 0xffff, 0x7fff, 0x8000, 1]), at);
        break;
      case 4:
        b = b.subarray(0, rng.int(0, b.length));
        break;
      case 5: {
        const to = Math.min(b.length, at + rng.int(1, 512));
        b = Buffer.concat([b.subarray(0, to), b.subarray(at, to), b.subarray(to)]);
        break;
      }
      case 6: {
        const to = Math.min(b.length, at + rng.int(1, 512));
        b = Buffer.concat([b.subarray(0, at), b.subarray(to)]);
        break;
      }
      case 7:
        b = Buffer.concat([b.subarray(0, at), rng.bytes(rng.int(1, 64)), b.subarray(at)]);
        break;
      default: {
        const other = rng.pick(others);
        const from = rng.int(0, other.length);
        b = Buffer.concat([b.subarray(0, at), other.subarray(from, from + rng.int(1, 4096))]);
      }
    }
  }
  return new Uint8Array(b);
}

export interface DecoderInput {
  bytes: Uint8Array;
}

/** Decodes one mutated file through the pool and reads every window, as the routes do. */
export async function decodeCase(pool: DecoderPool, input: DecoderInput, caseTimeoutMs: number): Promise<Outcome> {
  const work = (async (): Promise<Outcome> => {
    try {
      const stream = await pool.open(input.bytes.slice(), { targetRate: 16000, maxDurationSeconds: 7200 });
      for await (const window of stream) {
        for (let i = 0; i < window.length; i++) if (!Number.isFinite(window[i]!)) return { kind: '5xx', detail: 'a window with non-finite samples' };
      }
      return { kind: '2xx', status: 200 };
    } catch (error) {
      const api = toApiError(error);
      if (api.status === 503 && api.headers['retry-after']) return { kind: '503', status: 503, detail: api.message };
      if (api.status >= 500) return { kind: '5xx', status: api.status, detail: `${(error as Error).name}: ${(error as Error).message}`.slice(0, 300) };
      if (error instanceof AudioDecodeError && error.kind === 'timeout') return { kind: '4xx', status: api.status, detail: 'decoder timeout' };
      return { kind: '4xx', status: api.status };
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<Outcome>(
    (resolve) => (timer = setTimeout(() => resolve({ kind: 'hang', detail: 'the decode did not settle within the case timeout' }), caseTimeoutMs)),
  );
  try {
    return await Promise.race([work, hang]);
  } finally {
    clearTimeout(timer);
  }
}
