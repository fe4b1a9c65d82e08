/**
 * ffmpeg for the codec tests: produces reference files in every upload format from a known Float32
 * signal, so that decoded samples can be compared with what went in. Prefers a system `ffmpeg` on PATH
 * (usually newer), else the static build inside `@ffmpeg-installer/ffmpeg` (ffmpeg 4.1 here).
 *
 * The PCM goes in through stdin as raw f32le; the result is written to a temp file rather than a pipe
 * because several muxers need to seek back (WAV and MP3 fix their headers, MP4 writes its index, and
 * `+faststart` moves it to the front), and a pipe would give different files from what clients upload.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

let cachedPath: string | undefined;

/** Absolute path of the ffmpeg binary the tests use. */
export function ffmpegPath(): string {
  if (cachedPath) return cachedPath;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'ffmpeg');
    try {
      accessSync(candidate, constants.X_OK);
      return (cachedPath = candidate);
    } catch {
      // not here; keep looking
    }
  }
  const require = createRequire(import.meta.url);
  return (cachedPath = (require('@ffmpeg-installer/ffmpeg') as { path: string }).path);
}

/** Interleaves channels into one f32le byte buffer, the layout ffmpeg's `-f f32le` reads. */
function interleave(channels: Float32Array[]): Buffer {
  const n = channels[0]!.length;
  const c = channels.length;
  const out = new Float32Array(n * c);
  for (let i = 0; i < n; i++) for (let k = 0; k < c; k++) out[i * c + k] = channels[k]![i]!;
  return Buffer.from(out.buffer);
}

/** Runs ffmpeg with `args`, writing `stdin` to it; resolves with stdout, rejects with stderr on failure. */
export function runFfmpeg(args: string[], stdin?: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`ffmpeg ${args.join(' ')} exited with ${code}: ${Buffer.concat(err).toString()}`));
    });
    child.stdin.on('error', () => {}); // ffmpeg may close stdin early when it fails; the exit code reports it
    child.stdin.end(stdin ?? Buffer.alloc(0));
  });
}

/**
 * Encodes `channels` (Float32, at `rate`) with ffmpeg output options `outputArgs` (codec, muxer flags…)
 * into a file named with `extension`, and returns its bytes.
 */
export async function encodeWithFfmpeg(channels: Float32Array[], rate: number, outputArgs: string[], extension: string): Promise<Uint8Array> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-ffmpeg-'));
  try {
    const file = path.join(dir, `out.${extension}`);
    const input = ['-f', 'f32le', '-ar', String(rate), '-ac', String(channels.length), '-i', 'pipe:0'];
    // -map_metadata -1 and -fflags +bitexact keep encoder tags out, so the same input gives the same bytes.
    await runFfmpeg([...input, '-map_metadata', '-1', '-fflags', '+bitexact', ...outputArgs, '-y', file], interleave(channels));
    return new Uint8Array(readFileSync(file));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** How decoded samples must match the source. */
export type Fidelity =
  /** Bit-exact up to the stated error (lossless: WAV PCM/float, FLAC). */
  | { kind: 'exact'; maxError: number }
  /**
   * Lossy: after alignment by cross-correlation (searched over ±maxLagSeconds, default 20 ms: codecs
   * add priming delay), SNR and correlation at least these.
   */
  | { kind: 'lossy'; minSnrDb: number; minCorrelation: number; maxLagSeconds?: number };

/**
 * One upload format in the decoder matrix: how to produce it from PCM, what the decoder must call it,
 * and how close the decoded audio must be. The matrix tests iterate over a list of these, so adding a
 * producer (e.g. Kuma's own encoders) is adding an entry.
 */
export interface UploadFormat {
  name: string;
  /** `DecodedAudio.container` expected from the decoder. */
  container: string;
  fidelity: Fidelity;
  /** Source rates this producer accepts; default: all. */
  rates?: readonly number[];
  encode(channels: Float32Array[], rate: number): Promise<Uint8Array>;
}

const ff = (args: string[], ext: string) => (channels: Float32Array[], rate: number) => encodeWithFfmpeg(channels, rate, args, ext);

/** 16-bit quantisation: ffmpeg rounds x·32768; half an LSB of error, a whole one allowed. */
const LSB16 = 1 / 32768;
/** libopus only takes these rates; 22.05/44.1 kHz sources go in resampled to 48 kHz by ffmpeg. */
const opusArgs = (rate: number) => ['-c:a', 'libopus', '-b:a', '48k', ...([8000, 12000, 16000, 24000, 48000].includes(rate) ? [] : ['-ar', '48000'])];

/**
 * Thresholds for the lossy entries sit 3–5 dB under the worst case measured over 8–48 kHz, mono and
 * stereo, on 0.6 s of speechLike() with ffmpeg 4.1 (mp3 18.6 dB, Opus 13.5, Vorbis 16.9, AAC 19.3,
 * G.711 37.3); the decoded waveform of a perceptual codec is not expected to be closer than that.
 * ADTS below 32 kHz decodes with ≈ 481 samples of extra delay (audio-decode's AAC decoder assumes
 * implicit SBR there and reports twice the rate), hence its wider lag window.
 */
export const FFMPEG_FORMATS: readonly UploadFormat[] = [
  { name: 'wav s16', container: 'wav', fidelity: { kind: 'exact', maxError: LSB16 }, encode: ff(['-c:a', 'pcm_s16le'], 'wav') },
  { name: 'wav s24', container: 'wav', fidelity: { kind: 'exact', maxError: 2 ** -23 }, encode: ff(['-c:a', 'pcm_s24le'], 'wav') },
  { name: 'wav s32', container: 'wav', fidelity: { kind: 'exact', maxError: 2 ** -24 }, encode: ff(['-c:a', 'pcm_s32le'], 'wav') },
  { name: 'wav f32', container: 'wav', fidelity: { kind: 'exact', maxError: 0 }, encode: ff(['-c:a', 'pcm_f32le'], 'wav') },
  { name: 'wav f64 (extensible)', container: 'wav', fidelity: { kind: 'exact', maxError: 0 }, encode: ff(['-c:a', 'pcm_f64le'], 'wav') },
  { name: 'rf64 s16', container: 'wav', fidelity: { kind: 'exact', maxError: LSB16 }, encode: ff(['-c:a', 'pcm_s16le', '-rf64', 'always'], 'wav') },
  // G.711 keeps ~13 bits around zero and 4 mantissa bits: ≈ 35–38 dB SNR on speech, exactly what a codec is.
  { name: 'wav μ-law', container: 'wav', fidelity: { kind: 'lossy', minSnrDb: 32, minCorrelation: 0.999 }, encode: ff(['-c:a', 'pcm_mulaw'], 'wav') },
  { name: 'wav A-law', container: 'wav', fidelity: { kind: 'lossy', minSnrDb: 32, minCorrelation: 0.999 }, encode: ff(['-c:a', 'pcm_alaw'], 'wav') },
  { name: 'flac', container: 'flac', fidelity: { kind: 'exact', maxError: LSB16 }, encode: ff(['-c:a', 'flac'], 'flac') },
  { name: 'ogg/flac', container: 'ogg-flac', fidelity: { kind: 'exact', maxError: LSB16 }, encode: ff(['-c:a', 'flac', '-f', 'ogg'], 'oga') },
  { name: 'mp3', container: 'mp3', fidelity: { kind: 'lossy', minSnrDb: 15, minCorrelation: 0.98 }, encode: ff(['-c:a', 'libmp3lame', '-b:a', '128k'], 'mp3') },
  {
    name: 'ogg/opus',
    container: 'ogg-opus',
    fidelity: { kind: 'lossy', minSnrDb: 10, minCorrelation: 0.95 },
    encode: (c, r) => encodeWithFfmpeg(c, r, opusArgs(r), 'ogg'),
  },
  {
    name: 'ogg/vorbis',
    container: 'ogg-vorbis',
    fidelity: { kind: 'lossy', minSnrDb: 13, minCorrelation: 0.97 },
    encode: ff(['-c:a', 'libvorbis', '-q:a', '5'], 'ogg'),
  },
  {
    name: 'webm/opus',
    container: 'webm',
    fidelity: { kind: 'lossy', minSnrDb: 10, minCorrelation: 0.95 },
    encode: (c, r) => encodeWithFfmpeg(c, r, opusArgs(r), 'webm'),
  },
  {
    name: 'm4a aac faststart',
    container: 'mp4',
    fidelity: { kind: 'lossy', minSnrDb: 15, minCorrelation: 0.98 },
    encode: ff(['-c:a', 'aac', '-b:a', '128k', '-movflags', '+faststart'], 'm4a'),
  },
  {
    name: 'm4a aac index at end',
    container: 'mp4',
    fidelity: { kind: 'lossy', minSnrDb: 15, minCorrelation: 0.98 },
    encode: ff(['-c:a', 'aac', '-b:a', '128k'], 'm4a'),
  },
  // Fragmented MP4 (moov without samples, then moof+mdat pairs): what streaming muxers and Kuma's fmp4 write.
  {
    name: 'm4a aac fragmented',
    container: 'mp4',
    fidelity: { kind: 'lossy', minSnrDb: 15, minCorrelation: 0.98 },
    encode: ff(['-c:a', 'aac', '-b:a', '128k', '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4'], 'm4a'),
  },
  {
    name: 'adts aac',
    container: 'adts',
    fidelity: { kind: 'lossy', minSnrDb: 15, minCorrelation: 0.98, maxLagSeconds: 0.08 },
    encode: ff(['-c:a', 'aac', '-b:a', '128k', '-f', 'adts'], 'aac'),
  },
];
