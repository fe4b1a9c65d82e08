/** The phone leg's audio formats as the speech pipeline names them, and their silence. */
import type { SpeechFormat } from '../../codecs/types.js';
import type { CallAudioFormat } from '../carriers/contract.js';

/** The speech format that encodes straight to the phone leg's bytes (L16 here is little-endian). */
export function callSpeechFormat(format: CallAudioFormat): SpeechFormat {
  if (format.codec === 'pcmu') return 'ulaw';
  if (format.codec === 'pcma') return 'alaw';
  return format.sampleRate === 16000 ? 'l16_16000' : 'l16_8000';
}

/** The byte value of silence: G.711 μ-law 0xFF, A-law 0xD5, linear PCM 0. */
export function silenceByteOf(format: CallAudioFormat): number {
  if (format.codec === 'pcmu') return 0xff;
  if (format.codec === 'pcma') return 0xd5;
  return 0;
}

/** Bytes per second of the phone leg's audio. */
export function bytesPerSecond(format: CallAudioFormat): number {
  return format.codec === 'l16' ? format.sampleRate * 2 : format.sampleRate;
}
