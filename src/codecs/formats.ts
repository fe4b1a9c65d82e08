/**
 * The table of the 13 speech output formats: media type, encoded sample rate, losslessness and codec
 * frame size. Encoders, the speech endpoints (Content-Type) and the streaming tests all read it from here,
 * so a rate or media type is decided once.
 */

import { SPEECH_FORMATS, type EncodingVariant, type FormatInfo, type SpeechFormat } from './types.js';

/** Samples per MP3 frame at 24 kHz: LAME encodes 24 kHz as MPEG-2 Layer III, whose frames hold 576 samples (not 1152). */
export const MP3_FRAME_SAMPLES = 576;
/** Kuma's own MP3 bitrate (mp3.ts says why); a variant may name another. */
export const MP3_BITRATE_KBPS = 48;
/** 20 ms Opus frames at 24 kHz: the usual speech framing (Discord, WebRTC), 0.1 ms of CPU per frame at complexity 5. */
export const OPUS_FRAME_SAMPLES = 480;
/** AAC-LC always codes 1024 samples per frame. */
export const AAC_FRAME_SAMPLES = 1024;
/**
 * FLAC block size at 24 kHz: 576 samples = 24 ms, close to the Opus/MP3 frame latency. Larger blocks compress
 * speech a few percent better, which is not worth doubling the time to the first byte of a stream.
 */
export const FLAC_BLOCK_SAMPLES = 576;

function entry(format: SpeechFormat, mediaType: string, sampleRate: number, lossless: boolean, frameSamples: number): FormatInfo {
  return Object.freeze({ format, mediaType, sampleRate, lossless, frameSamples });
}

/** Headerless mono s16le at `rate`, labelled so that nothing about the bytes is left implicit. */
function littleEndianPcm(rate: number): string {
  return `audio/pcm;rate=${rate};channels=1;encoding=signed-int;bits=16;endianness=little`;
}

/**
 * Media types follow PROTOCOLS §6 where it names one; for the rest:
 * - μ-law: `audio/basic` (RFC 2046: 8 kHz mono μ-law, headerless) — exactly these bytes.
 * - A-law: `audio/x-alaw-basic`, the long-standing counterpart of audio/basic that browsers and SoX know.
 * - l16_8000 / l16_16000: NOT `audio/L16`. RFC 2586 defines L16 as network byte order (big-endian), and RTP
 *   stacks, ffmpeg and GStreamer byte-swap what carries that label; the SPEC makes these bytes the same
 *   structure as `pcm` (s16le), so that label would turn them into noise in a conforming consumer. They are
 *   `audio/pcm` (the type `pcm` already uses, OpenAI's name for headerless s16le) with RFC 2586's `rate` and
 *   `channels` parameters plus `encoding`, `bits` and `endianness`, which spell out what the bytes are for a
 *   client that cannot know the format name. No registered media type denotes headerless little-endian PCM.
 * - fmp4: `audio/mp4` (AAC-LC in fragmented MP4, playable by MediaSource).
 *
 * `ulaw_8k` (older models' name) and `ulaw` (jifili-1's name) are the same thing: headerless 8 kHz G.711
 * μ-law. The older service's name does not imply a WAV wrapper (it has a separate `wav_8k`), so both
 * produce identical bytes; only the name differs.
 */
export const FORMAT_INFO: Readonly<Record<SpeechFormat, FormatInfo>> = Object.freeze({
  pcm: entry('pcm', 'audio/pcm', 24000, true, 1),
  l16_8000: entry('l16_8000', littleEndianPcm(8000), 8000, true, 1),
  l16_16000: entry('l16_16000', littleEndianPcm(16000), 16000, true, 1),
  wav: entry('wav', 'audio/wav', 24000, true, 1),
  wav_8k: entry('wav_8k', 'audio/wav', 8000, true, 1),
  // G.711 is lossy against 16-bit PCM (8-bit companding), though deterministic sample by sample.
  ulaw: entry('ulaw', 'audio/basic', 8000, false, 1),
  ulaw_8k: entry('ulaw_8k', 'audio/basic', 8000, false, 1),
  alaw: entry('alaw', 'audio/x-alaw-basic', 8000, false, 1),
  mp3: entry('mp3', 'audio/mpeg', 24000, false, MP3_FRAME_SAMPLES),
  opus: entry('opus', 'audio/ogg', 24000, false, OPUS_FRAME_SAMPLES),
  aac: entry('aac', 'audio/aac', 24000, false, AAC_FRAME_SAMPLES),
  fmp4: entry('fmp4', 'audio/mp4', 24000, false, AAC_FRAME_SAMPLES),
  flac: entry('flac', 'audio/flac', 24000, true, FLAC_BLOCK_SAMPLES),
});

/**
 * The format's table entry, or with a variant (EncoderOptions.variant) the entry at that rate: `pcm` at
 * any rate an encoder takes, `mp3` at an MPEG sample rate with a bitrate LAME encodes there. A variant of
 * another format, or an impossible one, is a RangeError: callers map names to variants first
 * (api/elevenlabs/output-format.ts), so this is a programming error, not a client's.
 */
export function formatInfo(format: SpeechFormat, variant?: EncodingVariant): FormatInfo {
  const info = FORMAT_INFO[format];
  if (!variant) return info;
  const { sampleRate, bitrateKbps } = variant;
  if (format === 'pcm') {
    if (!Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 48000 || bitrateKbps !== undefined)
      throw new RangeError(`pcm variant: a rate from 8000 to 48000 Hz and no bitrate, got ${JSON.stringify(variant)}`);
    return Object.freeze({ ...info, mediaType: littleEndianPcm(sampleRate), sampleRate });
  }
  if (format === 'mp3') {
    const layer = MP3_RATES.get(sampleRate);
    const bitrate = bitrateKbps ?? MP3_BITRATE_KBPS;
    if (!layer || !layer.bitrates.includes(bitrate)) throw new RangeError(`mp3 variant: no MPEG Layer III stream at ${sampleRate} Hz and ${bitrate} kbit/s`);
    return Object.freeze({ ...info, sampleRate, frameSamples: layer.frameSamples });
  }
  throw new RangeError(`the ${format} format is encoded at its own rate only`);
}

/**
 * MPEG Layer III sample rates and the constant bitrates LAME encodes at each: MPEG-1 (32, 44.1, 48 kHz,
 * 1152-sample frames) from 32 kbit/s, MPEG-2 (16, 22.05, 24 kHz, 576-sample frames) up to 160, MPEG-2.5
 * (8, 11.025, 12 kHz) up to 64 — the standard's tables, restricted to what wasm-media-encoders accepts.
 */
const MPEG1 = { frameSamples: 1152, bitrates: [32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320] };
const MPEG2 = { frameSamples: MP3_FRAME_SAMPLES, bitrates: [8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160] };
const MPEG25 = { frameSamples: MP3_FRAME_SAMPLES, bitrates: [8, 16, 24, 32, 40, 48, 64] };
const MP3_RATES: ReadonlyMap<number, { frameSamples: number; bitrates: number[] }> = new Map([
  [48000, MPEG1],
  [44100, MPEG1],
  [32000, MPEG1],
  [24000, MPEG2],
  [22050, MPEG2],
  [16000, MPEG2],
  [12000, MPEG25],
  [11025, MPEG25],
  [8000, MPEG25],
]);

export function isSpeechFormat(value: unknown): value is SpeechFormat {
  return typeof value === 'string' && (SPEECH_FORMATS as readonly string[]).includes(value);
}
