/**
 * What every simulated caller says: for each phrase, a short silence, the phrase, and a silence long enough
 * for Kuma to hear the end of the turn and play the echoed reply before the caller speaks again; the phrases
 * one after another, round and round. Built once as 160-byte μ-law frames in base64, shared by every call.
 *
 * The phrase audio is the server's own voice (POST /audio/speech, ulaw) with its quiet head and tail cut, so
 * that the last frame the caller sends of it is speech: "end of speech" is then a frame the caller knows.
 */
import alawmulaw from 'alawmulaw';
import type { CallScript } from './twilio-caller.js';
import { FRAME_MS } from './reply-timing.js';

const FRAME_BYTES = 160;
/** μ-law's zero (silence) byte. */
const ULAW_SILENCE = 0xff;
/** Frames quieter than this RMS (16-bit scale, about −40 dBFS) at the phrase's ends are cut. */
const QUIET_RMS = 330;
const LEAD_SILENCE_MS = 400;
/** After the phrase: the end-of-turn silence, the reply's wait and playback (≈ the phrase again), a pause. */
const TAIL_BASE_MS = 2500;

export const SCRIPT_SHAPE = `per phrase ${LEAD_SILENCE_MS} ms of silence, the phrase, then silence for ${TAIL_BASE_MS} ms + the phrase's length (the reply is the same words), phrases in turn; silence is streamed as μ-law frames as a phone line does`;

export interface PhraseInfo {
  text: string;
  /** Length of the phrase as the caller speaks it (quiet ends cut), ms. */
  speechMs: number;
}

export interface CallerScript {
  script: CallScript;
  /** Frame index where each phrase's cycle begins (callers start on different phrases). */
  phraseStarts: number[];
  phrases: PhraseInfo[];
}

/** `tailMs`: the silence after each phrase beyond the phrase's own length (default TAIL_BASE_MS). */
export function callerScript(spoken: Array<{ text: string; ulaw: Uint8Array }>, tailMs = TAIL_BASE_MS): CallerScript {
  const silencePayload = Buffer.alloc(FRAME_BYTES, ULAW_SILENCE).toString('base64');
  const payloads: string[] = [];
  const speech: number[] = [];
  const speechEnds: Record<number, number> = {};
  const phraseStarts: number[] = [];
  const phrases: PhraseInfo[] = [];
  const silence = (ms: number) => {
    for (let i = 0; i < Math.round(ms / FRAME_MS); i++) (payloads.push(silencePayload), speech.push(0));
  };
  spoken.forEach(({ text, ulaw }, index) => {
    const frames = trimQuiet(framesOf(ulaw));
    if (frames.length === 0) throw new Error(`the phrase "${text}" came back silent`);
    phraseStarts.push(payloads.length);
    silence(LEAD_SILENCE_MS);
    for (const frame of frames) (payloads.push(Buffer.from(frame).toString('base64')), speech.push(1));
    speechEnds[payloads.length - 1] = index;
    const speechMs = frames.length * FRAME_MS;
    silence(tailMs + speechMs);
    phrases.push({ text, speechMs });
  });
  return { script: { payloads, speech: Uint8Array.from(speech), speechEnds, silencePayload }, phraseStarts, phrases };
}

/** Whole 160-byte frames, the last padded with silence. */
function framesOf(ulaw: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let offset = 0; offset < ulaw.length; offset += FRAME_BYTES) {
    const frame = new Uint8Array(FRAME_BYTES).fill(ULAW_SILENCE);
    frame.set(ulaw.subarray(offset, offset + FRAME_BYTES));
    frames.push(frame);
  }
  return frames;
}

function trimQuiet(frames: Uint8Array[]): Uint8Array[] {
  const loud = frames.map((frame) => rms(alawmulaw.mulaw.decode(frame)) >= QUIET_RMS);
  const first = loud.indexOf(true);
  if (first < 0) return [];
  return frames.slice(first, loud.lastIndexOf(true) + 1);
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / samples.length);
}
