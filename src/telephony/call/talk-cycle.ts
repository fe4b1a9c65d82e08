/**
 * One talk cycle of a call's voice (a greeting, an app reply up to its `last` token, a `play` file or DTMF
 * tones): its phrase splitter and speaker (or encoded audio), its hold, the frames it has produced, what the
 * carrier confirmed played, and its text with the time each character's audio begins — from which an
 * interruption reports the words heard.
 */
import type { Reservation } from '../../billing/ledger.js';
import { createEncoder } from '../../codecs/encoders/index.js';
import type { SpeechFormat } from '../../codecs/types.js';
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';
import { PhraseSpeaker, type PhraseAlignment, type SpokenAudio } from '../../pipeline/phrase-speaker.js';
import { TextPhraseSplitter } from '../../pipeline/text-phrase-splitter.js';
import type { VoiceSetup } from './call-voice.js';

/** Encoder slices of the phone leg (seconds): the first after a pause, and the longest. */
const PHONE_SLICES = { first: 1, max: 4 };

export class TalkCycle {
  readonly splitter = new TextPhraseSplitter();
  readonly stop = new AbortController();
  readonly speaker: PhraseSpeaker;
  /** Where the cycle's audio comes from: its speaker, or (play, DTMF) audio encoded as it is. */
  source: AsyncIterable<SpokenAudio>;
  reservation: Reservation | null = null;
  held = 0;
  sent = 0; // characters of phrases whose frames were all sent
  ended = false; // no more text will come
  done = false;
  /** The cycle's text, character by character, with when its audio begins on the cycle's clock (ms). */
  readonly chars: Array<{ char: string; startMs: number }> = [];
  firstFrame = -1; // index in the stream's frame count of the cycle's first frame
  frames = 0;
  confirmedMs = 0; // played, as confirmed by the carrier's mark echoes
  private remainder = new Uint8Array(0);
  finished: Promise<void> = Promise.resolve();

  constructor(
    readonly id: number,
    setup: VoiceSetup,
    readonly interruptible: boolean,
    readonly preemptible = false,
  ) {
    // Whole seconds per encoder slice: the pacer plays the audio out in real time, and each slice is one trip
    // through the encoder pool, which under load can take longer than a short slice lasts.
    this.speaker = new PhraseSpeaker({ engine: setup.engine, voice: setup.voice, format: setup.format, speakable: setup.speakable, account: setup.charge.accountId, signal: this.stop.signal, slices: PHONE_SLICES, encoders: setup.encoders });
    this.source = this.speaker;
  }

  /** Whole frames of `bytes` (with what was left over before); the rest waits for more. */
  frameOut(bytes: Uint8Array, frameBytes: number): Uint8Array[] {
    const all = this.remainder.length ? concat(this.remainder, bytes) : bytes;
    const frames: Uint8Array[] = [];
    let offset = 0;
    for (; offset + frameBytes <= all.length; offset += frameBytes) frames.push(all.slice(offset, offset + frameBytes));
    this.remainder = all.slice(offset);
    return frames;
  }

  /** The last partial frame, padded with silence to a whole one. */
  lastFrame(frameBytes: number, silence: number): Uint8Array | null {
    if (!this.remainder.length) return null;
    const frame = new Uint8Array(frameBytes).fill(silence);
    frame.set(this.remainder);
    this.remainder = new Uint8Array(0);
    return frame;
  }

  addAlignments(alignments: PhraseAlignment[]): void {
    for (const a of alignments) a.text.chars.forEach((char, i) => this.chars.push({ char, startMs: a.text.charStartTimesMs[i]! }));
  }

  /** The text whose audio began before `ms`, cut back to the last whole word unless everything was heard. */
  heardText(ms: number): string {
    const heard = this.chars.filter((c) => c.startMs < ms).map((c) => c.char).join('');
    const all = this.chars.map((c) => c.char).join('');
    if (heard.length === all.length) return all.trim();
    const cut = heard.search(/\s\S*$/);
    return (cut >= 0 ? heard.slice(0, cut) : '').trim();
  }
}

/** `samples` encoded in one-second slices, `loop` times (0: until `signal`). */
export async function* encodedAudio(encoders: EncoderSource, format: SpeechFormat, samples: Float32Array, sampleRate: number, loop: number, signal: AbortSignal): AsyncGenerator<SpokenAudio> {
  const encoder = await createEncoder(format, { inputRate: sampleRate }, encoders);
  try {
    for (let round = 0; (loop === 0 || round < loop) && !signal.aborted && samples.length; round++) {
      for (let offset = 0; offset < samples.length && !signal.aborted; offset += sampleRate) {
        const bytes = await encoder.push(samples.subarray(offset, offset + sampleRate));
        yield { bytes, alignments: [], charactersComplete: 0 };
      }
    }
    yield { bytes: await encoder.flush(), alignments: [], charactersComplete: 0 };
  } finally {
    encoder.close();
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
