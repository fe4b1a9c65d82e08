/** ffmpeg's output arguments for each speech format (for the side-by-side baseline) and which ffmpeg to run. */
import { execFileSync } from 'node:child_process';
import { resolveFfmpegPath } from '../../src/codecs/encoders/ffmpeg-aac-pool.js';
import type { SpeechFormat } from '../../src/codecs/types.js';

export const FFMPEG_FORMAT_ARGS: Partial<Record<SpeechFormat, string[]>> = {
  pcm: ['-f', 's16le'],
  l16_8000: ['-ar', '8000', '-f', 's16le'],
  l16_16000: ['-ar', '16000', '-f', 's16le'],
  wav: ['-f', 'wav'],
  wav_8k: ['-ar', '8000', '-f', 'wav'],
  ulaw: ['-ar', '8000', '-c:a', 'pcm_mulaw', '-f', 'mulaw'],
  ulaw_8k: ['-ar', '8000', '-c:a', 'pcm_mulaw', '-f', 'mulaw'],
  alaw: ['-ar', '8000', '-c:a', 'pcm_alaw', '-f', 'alaw'],
  mp3: ['-c:a', 'libmp3lame', '-b:a', '48k', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-application', 'voip', '-frame_duration', '20', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-aac_coder', 'fast', '-aac_tns', '0', '-aac_pns', '0', '-q:a', '0.7', '-f', 'adts'],
  fmp4: [
    '-c:a',
    'aac',
    '-aac_coder',
    'fast',
    '-aac_tns',
    '0',
    '-aac_pns',
    '0',
    '-q:a',
    '0.7',
    '-f',
    'mp4',
    '-movflags',
    'frag_keyframe+empty_moov+default_base_moof',
  ],
  flac: ['-c:a', 'flac', '-f', 'flac'],
};

let cached: string | null = null;

/** The system ffmpeg when one is on PATH (CI installs Debian's), else the static build Kuma ships with. */
export function ffmpegBinary(): string {
  if (cached) return cached;
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    cached = 'ffmpeg';
  } catch {
    cached = resolveFfmpegPath(process.env.KUMA_FFMPEG_PATH);
  }
  return cached;
}
