/**
 * The call's voice: Bambara text in (the app's reply tokens, a greeting), paced carrier frames out. An
 * adapter over the voice core (src/voice/): the voice session holds, limits and charges the speech — one
 * utterance per talk cycle, with the phone leg's format and long encoder slices — and this file orders the
 * cycles on the call's paced stream (talk-cycle.ts), turns carrier marks into what was heard, and stops
 * cycles for a barge-in or a preemptible reply.
 *
 * Text is spoken in talk cycles (a greeting, or an app reply up to its `last` token), one after another. A new
 * cycle preempts the cycles before it that were marked `preemptible`. Text beyond the voice's limits
 * (voice/voice-session.ts, over every cycle still speaking) is refused whole (VoiceBusyError).
 *
 * What was heard: the carrier echoes marks as the audio before them plays; between marks, the frames sent
 * (less the pacer's lead) estimate it. An interruption reports the cycle's text up to the last whole word
 * whose audio began before that point, and how long the cycle had played.
 *
 * Billing (voice/speech-bill.ts): one hold per cycle, grown by each phrase's price before it is queued;
 * charged, when the cycle is done, the characters of the phrases whose frames were all sent to the carrier.
 * Phrases cut by an interruption are not charged. Ending the call is `close(reason)`.
 */
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';
import type { ChargeContext, Ledger } from '../../billing/ledger.js';
import type { SpeechFormat } from '../../codecs/types.js';
import { isCapacityError } from '../../engines/errors.js';
import type { Logger } from '../../observability/logger.js';
import { SessionLifecycle, type Session } from '../../primitives/session-lifecycle.js';
import type { PhraseEngine, Voice } from '../../voice/phrase-synthesis.js';
import { MAX_MESSAGE_CHARACTERS, MAX_PENDING_CHARACTERS, SpeechLimitError } from '../../voice/voice-session.js';
import { VoiceSession } from '../../voice/voice-session.js';
import type { PacedStream } from './frame-pacer.js';
import { TalkCycle, type CycleLine } from './talk-cycle.js';

/** Encoder slices of the phone leg (seconds): the first after a pause, and the longest. Whole seconds: the
 * pacer plays the audio out in real time, and each slice is one trip through the encoder pool, which under
 * load can take longer than a short slice lasts. */
const PHONE_SLICES = { first: 1, max: 4 };

/** The app sent more text than may wait to be spoken. */
export class VoiceBusyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VoiceBusyError';
  }
}

export interface CallVoiceSetup {
  model: string;
  engine: PhraseEngine;
  voice: Voice;
  speakable: ReadonlySet<string> | null;
  encoders: EncoderSource;
  /** The phone leg's format as a speech format (ulaw, alaw, l16_8000, l16_16000). */
  format: SpeechFormat;
  /** Bytes of one outbound frame (20 ms, or the carrier's frame duration). */
  frameBytes: number;
  /** The byte that is silence in this format (padding of a cycle's last frame). */
  silenceByte: number;
  ledger: Ledger;
  charge: ChargeContext;
  logger: Logger;
}

export interface VoiceOutput {
  paced: PacedStream;
  /** Audio the pacer sends ahead of real time when a stream starts. */
  leadMs: number;
  /** Sends a carrier mark; false when the carrier has no marks. */
  mark(name: string): boolean;
  /** Tells the carrier to drop the audio it holds. */
  clear(): void;
  /** The balance cannot pay for more speech: the call should end. */
  quotaExhausted(message: string): void;
  /** A cycle's audio has all been sent (or it was cut): for the call record. */
  cycleDone(characters: number): void;
  /** A cycle's first frame is going out now. */
  firstAudio?(): void;
}

export interface Interruption {
  utteranceUntilInterrupt: string;
  durationUntilInterruptMs: number;
}

export class CallVoice implements Session {
  private readonly lifecycle = new SessionLifecycle();
  private readonly voice: VoiceSession;
  private cycles: TalkCycle[] = [];
  private nextId = 0;
  private framesQueued = 0;
  private readonly marks = new Map<string, { cycle: TalkCycle; ms: number }>();
  private readonly line: CycleLine;

  constructor(
    private readonly setup: CallVoiceSetup,
    private readonly out: VoiceOutput,
  ) {
    const { model, engine, voice, speakable, encoders, format, ledger, charge, logger } = setup;
    this.voice = new VoiceSession({ model, engine, voice, speakable, format, slices: PHONE_SLICES, encoders, ledger, charge, logger, label: 'call speech' });
    this.line = this.lineOf(out.paced);
  }

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  /**
   * Adds Bambara text to the current talk cycle (a new one when none is open); `last` ends the cycle. A new
   * cycle preempts the cycles before it that were marked `preemptible` (they stop, and the carrier drops their
   * audio). Text beyond what may wait unspoken is refused whole (VoiceBusyError).
   */
  async say(text: string, last: boolean, options: { interruptible: boolean; preemptible?: boolean }): Promise<void> {
    if (this.closed) return;
    try {
      this.voice.admit(text);
    } catch (err) {
      if (!(err instanceof SpeechLimitError)) throw err;
      throw new VoiceBusyError(
        `${err.waiting} characters are waiting to be spoken and at most ${MAX_PENDING_CHARACTERS} may wait (${MAX_MESSAGE_CHARACTERS} per message); send this text again once more of the reply has been spoken.`,
      );
    }
    let cycle = this.cycles.find((c) => !c.ended && !c.done);
    if (!cycle) {
      const preempted = this.cycles.filter((c) => c.preemptible && !c.done);
      if (preempted.length) this.stop(preempted);
      const utterance = this.voice.open({ onQuotaExhausted: (err) => this.out.quotaExhausted(err.message) });
      cycle = this.start(TalkCycle.speaking(this.nextId++, utterance, options.interruptible, options.preemptible ?? false));
    }
    await cycle.utterance!.take(text);
    if (last) await cycle.utterance!.endInput();
  }

  /**
   * Plays audio that is not speech of text (a `play` file, DTMF tones) as a cycle of its own, after the ones
   * queued: `samples` at `sampleRate`, encoded to the phone leg's format, `loop` times (0 = until interrupted
   * or the call ends).
   */
  playAudio(samples: Float32Array, sampleRate: number, loop: number, interruptible: boolean): void {
    if (this.closed) return;
    this.start(TalkCycle.clip(this.nextId++, this.setup.encoders, this.setup.format, samples, sampleRate, loop, interruptible));
  }

  /** True while a cycle's audio is being made or played: caller speech now is a barge-in. */
  get speaking(): boolean {
    return this.cycles.some((c) => !c.done) || !this.out.paced.idle;
  }

  /** Whether the audio being played may be interrupted (the first cycle not yet done decides). */
  get interruptible(): boolean {
    return this.cycles.find((c) => !c.done)?.interruptible ?? true;
  }

  /** The carrier echoed a mark: the audio before it has been heard. */
  onMark(name: string): void {
    const mark = this.marks.get(name);
    if (!mark) return;
    this.marks.delete(name);
    mark.cycle.confirmedMs = Math.max(mark.cycle.confirmedMs, mark.ms);
  }

  /**
   * Barge-in: stops every cycle, drops the queued frames here and at the carrier, and reports what the
   * caller heard of the cycle that was playing (null when nothing was).
   */
  interrupt(): Interruption | null {
    const playing = this.cycles.find((c) => !c.done && c.firstFrame >= 0) ?? null;
    let report: Interruption | null = null;
    if (playing) {
      const paced = this.out.paced;
      const sentFrames = Math.min(paced.framesSent - playing.firstFrame, playing.frames);
      // Sent, less the pacer's lead (sent ahead of real time, not yet heard); never less than a mark confirmed.
      const heardMs = Math.max(playing.confirmedMs, sentFrames * paced.frameMs - this.out.leadMs, 0);
      report = { utteranceUntilInterrupt: playing.heardText(heardMs), durationUntilInterruptMs: heardMs };
    }
    this.marks.clear();
    // The dropped frames were never sent: stop() sets the count of queued frames back to what was sent.
    this.stop([...this.cycles]);
    return report;
  }

  /** Ends the voice (the call is over): every cycle stops now and settles what it sent. Idempotent. */
  async close(reason: string): Promise<void> {
    if (!this.lifecycle.close(reason)) return;
    const pending = this.cycles.map((c) => c.finished);
    for (const cycle of this.cycles) cycle.stop();
    await this.voice.close(reason);
    await Promise.all(pending);
  }

  /** Queues a cycle to play after the ones before it. */
  private start(cycle: TalkCycle): TalkCycle {
    const before = Promise.all(this.cycles.map((c) => c.finished));
    this.cycles.push(cycle);
    cycle.finished = cycle.play(this.line, before);
    return cycle;
  }

  /** Stops these cycles now: their synthesis, their queued frames here and at the carrier. */
  private stop(cycles: TalkCycle[]): void {
    for (const cycle of cycles) cycle.stop();
    this.cycles = this.cycles.filter((c) => !cycles.includes(c));
    this.out.paced.clear();
    this.framesQueued = this.out.paced.framesSent;
    this.out.clear();
  }

  private lineOf(paced: PacedStream): CycleLine {
    const { frameBytes, silenceByte, logger, charge } = this.setup;
    const out = this.out;
    const voice = this;
    return {
      paced,
      frameBytes,
      silenceByte,
      get framesQueued() {
        return voice.framesQueued;
      },
      frame(bytes) {
        voice.framesQueued++;
        paced.frame(bytes);
      },
      firstAudio() {
        if (out.firstAudio) paced.marker(out.firstAudio);
      },
      marked(cycle, name, ms) {
        if (out.mark(name)) voice.marks.set(name, { cycle, ms });
      },
      failed(err) {
        // A voice model at capacity is load, not a fault: warn, never error.
        const level = isCapacityError(err) ? 'warn' : 'error';
        logger[level](
          { requestId: charge.requestId, err: (err as Error).message },
          level === 'warn' ? 'call voice refused: model at capacity' : 'call voice failed',
        );
      },
      finished(cycle) {
        voice.cycles = voice.cycles.filter((c) => c !== cycle);
        out.cycleDone(cycle.deliveredCharacters);
      },
    };
  }
}
