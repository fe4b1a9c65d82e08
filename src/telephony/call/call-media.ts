/**
 * Audio a relay app asks for that is not speech of text: `sendDigits` (DTMF tones, as a phone keypad makes
 * them) and `play` (an audio file at a URL the allow-list admits, fetched with size and time limits and
 * decoded by the decoder pool like any upload). Both play as their own cycle on the call's voice, in order
 * with the speech around them.
 */
import type { DecoderPool } from '../../codecs/decode/decoder-pool.js';
import { fetchPlaySource } from '../relay/play-source.js';
import type { RelayBridgeOptions } from './relay-bridge.js';

/** ITU-T Q.23 keypad frequencies (low, high) in Hz. */
const DTMF: Record<string, [number, number]> = {
  '1': [697, 1209],
  '2': [697, 1336],
  '3': [697, 1477],
  '4': [770, 1209],
  '5': [770, 1336],
  '6': [770, 1477],
  '7': [852, 1209],
  '8': [852, 1336],
  '9': [852, 1477],
  '*': [941, 1209],
  '0': [941, 1336],
  '#': [941, 1477],
};
const TONE_MS = 100;
const GAP_MS = 100;
/** Twilio's `w`: a half-second pause. */
const PAUSE_MS = 500;
const TONE_RATE = 8000;
/** Longest `play` file, decoded. */
const MAX_PLAY_SECONDS = 300;

/** The tones of `digits` (0-9, *, #, w), each tone at -6 dBFS per frequency, with gaps. */
export function dtmfSamples(digits: string, rate = TONE_RATE): Float32Array {
  const ms = [...digits].reduce((sum, d) => sum + (d.toLowerCase() === 'w' ? PAUSE_MS : TONE_MS + GAP_MS), 0);
  const out = new Float32Array(Math.round((ms * rate) / 1000));
  let at = 0;
  for (const digit of digits) {
    const pair = DTMF[digit];
    if (!pair) {
      at += Math.round((PAUSE_MS * rate) / 1000);
      continue;
    }
    const n = Math.round((TONE_MS * rate) / 1000);
    for (let i = 0; i < n; i++) out[at + i] = 0.25 * (Math.sin((2 * Math.PI * pair[0] * i) / rate) + Math.sin((2 * Math.PI * pair[1] * i) / rate));
    at += n + Math.round((GAP_MS * rate) / 1000);
  }
  return out;
}

export function callMedia(decoder: DecoderPool, checkUrl: (url: URL) => Promise<void>): NonNullable<RelayBridgeOptions['media']> {
  return {
    async digits(call, digits) {
      call.voice.playAudio(dtmfSamples(digits), TONE_RATE, 1, false);
    },
    async play(call, source, loop, interruptible) {
      const { bytes } = await fetchPlaySource(source, { checkUrl, signal: call.signal });
      const audio = await decoder.decode(bytes, { targetRate: 16_000, maxDurationSeconds: MAX_PLAY_SECONDS });
      call.voice.playAudio(audio.samples, audio.sampleRate, loop, interruptible ?? true);
    },
  };
}
