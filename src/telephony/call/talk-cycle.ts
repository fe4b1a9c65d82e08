/**
 * One talk cycle of a call's voice — a greeting, an app reply up to its `last` token (an utterance of the
 * voice core, src/voice/utterance.ts, which holds, limits and charges its speech), or a `play` file or DTMF
 * tones (a clip, charged nothing) — and how its audio reaches the line: cut into whole frames of the phone
 * leg's format, queued on the call's paced stream (frame-pacer.ts) after the cycles before it, with a marker
 * after each phrase. The marker, sent with the frames, tells the utterance that the phrase's frames have all
 * gone to the carrier (its delivery) and sends the carrier a `mark`.
 *
 * Flow: synthesis runs ahead of the line by at most MAX_QUEUED_MS of audio — the cycle awaits the pacer's
 * drain, so an interrupted reply has not cost synthesis of what nobody will hear — and the cycle is done once
 * its last frame is out (or it was stopped).
 *
 * What was heard: the cycle keeps its text with the time each character's audio begins, the frames it
 * queued, and what the carrier confirmed played (mark echoes); an interruption reports the text up to the
 * last whole word whose audio began before the point reached.
 */
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';
import type { SpeechFormat } from '../../codecs/types.js';
import { untilAborted } from '../../primitives/until-aborted.js';
import { encodeClip } from '../../voice/phrase-encoder.js';
import type { PhraseAlignment, SpokenAudio } from '../../voice/phrase-speaker.js';
import type { Utterance } from '../../voice/utterance.js';
import type { PacedStream } from './frame-pacer.js';

/** Audio queued ahead of the pacer before synthesis waits. */
const MAX_QUEUED_MS = 2000;

/** The line a cycle plays into: the call's paced stream and what the call's voice keeps across cycles. */
export interface CycleLine {
  readonly paced: PacedStream;
  /** Bytes of one outbound frame, and the byte that is silence (padding of a cycle's last frame). */
  readonly frameBytes: number;
  readonly silenceByte: number;
  /** Frames queued on the stream so far, all cycles together. */
  readonly framesQueued: number;
  /** Queues one frame on the stream. */
  frame(bytes: Uint8Array): void;
  /** A cycle's first frame is about to be queued. */
  firstAudio(): void;
  /** A phrase's frames have all been sent: send the carrier mark `name` (`ms` into the cycle). */
  marked(cycle: TalkCycle, name: string, ms: number): void;
  /** The cycle's audio failed (synthesis, encoding). */
  failed(err: unknown): void;
  /** The cycle is done: its audio all sent, or it was stopped; its bill settled. */
  finished(cycle: TalkCycle): void;
}

export class TalkCycle {
  private readonly stopper = new AbortController();
  private remainder = new Uint8Array(0);
  private marks = 0;
  /** The cycle's text, character by character, with when its audio begins on the cycle's clock (ms). */
  private readonly chars: Array<{ char: string; startMs: number }> = [];
  /** Index in the stream's frame count of the cycle's first frame; -1 before it. */
  firstFrame = -1;
  frames = 0;
  /** Played, as confirmed by the carrier's mark echoes. */
  confirmedMs = 0;
  done = false;
  /** Resolves once the cycle is done and settled. */
  finished: Promise<void> = Promise.resolve();

  private constructor(
    readonly id: number,
    /** The speech of text, or null for a clip. */
    readonly utterance: Utterance | null,
    private readonly source: (signal: AbortSignal) => AsyncIterable<SpokenAudio>,
    readonly interruptible: boolean,
    readonly preemptible: boolean,
  ) {}

  /** A cycle that speaks text as it is given to its utterance. */
  static speaking(id: number, utterance: Utterance, interruptible: boolean, preemptible: boolean): TalkCycle {
    return new TalkCycle(id, utterance, () => utterance.audio(), interruptible, preemptible);
  }

  /** A cycle that plays `samples` (at `sampleRate`, encoded to `format`) `loop` times (0: until stopped). */
  static clip(
    id: number,
    encoders: EncoderSource,
    format: SpeechFormat,
    samples: Float32Array,
    sampleRate: number,
    loop: number,
    interruptible: boolean,
  ): TalkCycle {
    const source = async function* (signal: AbortSignal): AsyncGenerator<SpokenAudio> {
      for await (const bytes of encodeClip(encoders, format, samples, sampleRate, loop, signal)) yield { bytes, alignments: [], charactersComplete: 0 };
    };
    return new TalkCycle(id, null, source, interruptible, false);
  }

  /** No more text will come (a clip never takes any). */
  get ended(): boolean {
    return this.utterance ? this.utterance.inputEnded : true;
  }

  /** Characters whose frames were all sent to the carrier: what the cycle is charged. */
  get deliveredCharacters(): number {
    return this.utterance?.deliveredCharacters ?? 0;
  }

  /** Stops now: synthesis is cancelled, no more frames are queued; the utterance charges what was sent. */
  stop(): void {
    this.stopper.abort();
    void this.utterance?.interrupt();
  }

  /** Moves the cycle's audio to the line once `before` (the cycles queued before it) are done, then settles. */
  async play(line: CycleLine, before: Promise<unknown>): Promise<void> {
    await before;
    const { paced, frameBytes, silenceByte } = line;
    const signal = this.stopper.signal;
    try {
      for await (const item of this.source(signal)) {
        if (signal.aborted) break;
        this.addAlignments(item.alignments);
        for (const frame of this.frameOut(item.bytes, frameBytes)) this.queue(line, frame);
        if (item.charactersComplete > this.deliveredCharacters) {
          const characters = item.charactersComplete;
          const name = `kuma-${this.id}-${this.marks++}`;
          const ms = this.frames * paced.frameMs;
          paced.marker(() => {
            this.utterance?.delivered(characters);
            line.marked(this, name, ms);
          });
        }
        await untilAborted(paced.drained(Math.floor(MAX_QUEUED_MS / paced.frameMs)), signal);
      }
      const last = signal.aborted ? null : this.lastFrame(frameBytes, silenceByte);
      if (last) this.queue(line, last);
      // The cycle is done once its frames are out (or it was cut).
      await untilAborted(paced.drained(), signal);
    } catch (err) {
      if (!signal.aborted) line.failed(err);
    } finally {
      this.done = true;
      this.stopper.abort();
      await this.utterance?.close('finished');
      line.finished(this);
    }
  }

  /** The text whose audio began before `ms`, cut back to the last whole word unless everything was heard. */
  heardText(ms: number): string {
    const heard = this.chars
      .filter((c) => c.startMs < ms)
      .map((c) => c.char)
      .join('');
    const all = this.chars.map((c) => c.char).join('');
    if (heard.length === all.length) return all.trim();
    const cut = heard.search(/\s\S*$/);
    return (cut >= 0 ? heard.slice(0, cut) : '').trim();
  }

  private queue(line: CycleLine, frame: Uint8Array): void {
    if (this.firstFrame < 0) {
      this.firstFrame = line.framesQueued;
      line.firstAudio();
    }
    this.frames++;
    line.frame(frame);
  }

  private addAlignments(alignments: PhraseAlignment[]): void {
    for (const a of alignments) a.text.chars.forEach((char, i) => this.chars.push({ char, startMs: a.text.charStartTimesMs[i]! }));
  }

  /** Whole frames of `bytes` (with what was left over before); the rest waits for more. */
  private frameOut(bytes: Uint8Array, frameBytes: number): Uint8Array[] {
    const all = this.remainder.length ? concat(this.remainder, bytes) : bytes;
    const frames: Uint8Array[] = [];
    let offset = 0;
    for (; offset + frameBytes <= all.length; offset += frameBytes) frames.push(all.slice(offset, offset + frameBytes));
    this.remainder = all.slice(offset);
    return frames;
  }

  /** The last partial frame, padded with silence to a whole one. */
  private lastFrame(frameBytes: number, silence: number): Uint8Array | null {
    if (!this.remainder.length) return null;
    const frame = new Uint8Array(frameBytes).fill(silence);
    frame.set(this.remainder);
    this.remainder = new Uint8Array(0);
    return frame;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
