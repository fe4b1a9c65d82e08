/**
 * The call's voice: Bambara text in (the app's reply tokens, a greeting), paced carrier frames out.
 *
 * Text is spoken in talk cycles (a greeting, or an app reply up to its `last` token), one after another. A
 * cycle is a phrase splitter and a phrase speaker (pipeline/) encoding straight to the phone leg's format, cut
 * into whole 20 ms frames and handed to the call's paced stream (frame-pacer.ts). After each phrase a marker
 * goes out with the frames: it sends the carrier a `mark` (when the carrier has marks) and records what has
 * been sent. Synthesis runs ahead of the pacer by at most MAX_QUEUED_FRAMES, so an interrupted reply has not
 * cost synthesis of what nobody will hear.
 *
 * What was heard: the carrier echoes marks as the audio before them plays; between marks, the frames sent
 * (less the pacer's lead) estimate it. An interruption reports the cycle's text up to the last whole word
 * whose audio began before that point, and how long the cycle had played.
 *
 * Billing: one hold per cycle, grown by each phrase's price before it is queued; settled to the characters of
 * the phrases whose frames were all sent to the carrier (the speech socket's rule). Phrases cut by an
 * interruption are not charged.
 */
import { InsufficientQuotaError } from '../../billing/errors.js';
import type { ChargeContext, Ledger } from '../../billing/ledger.js';
import type { SpeechFormat } from '../../codecs/types.js';
import { isCapacityError } from '../../engines/errors.js';
import { KeyRevokedError } from '../../store/store-errors.js';
import type { Logger } from '../../observability/logger.js';
import type { PhraseEngine, Voice } from '../../pipeline/phrase-synthesis.js';
import type { TextChunk } from '../../pipeline/text-phrase-splitter.js';
import { FRAME_MS, type PacedStream } from './frame-pacer.js';
import { encodedAudio, TalkCycle } from './talk-cycle.js';
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';

/** Longest text of one app message, in characters. */
const MAX_TEXT_CHARACTERS = 10_000;
/** Text received and not yet synthesized, in characters (minutes of speech). */
const MAX_PENDING_CHARACTERS = 5_000;

/** The app sent more text than may wait to be spoken. */
export class VoiceBusyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VoiceBusyError';
  }
}

/** Audio queued ahead of the pacer before synthesis waits. */
const MAX_QUEUED_MS = 2000;

export interface VoiceSetup {
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

export class CallVoice {
  private cycles: TalkCycle[] = [];
  private nextId = 0;
  private framesQueued = 0;
  private readonly marks = new Map<string, { cycle: TalkCycle; ms: number }>();
  private closed = false;

  constructor(
    private readonly setup: VoiceSetup,
    private readonly out: VoiceOutput,
  ) {}

  /**
   * Adds Bambara text to the current talk cycle (a new one when none is open); `last` ends the cycle. A new
   * cycle preempts the cycles before it that were marked `preemptible` (they stop, and the carrier drops their
   * audio). Text beyond what may wait unspoken is refused whole (VoiceBusyError).
   */
  async say(text: string, last: boolean, options: { interruptible: boolean; preemptible?: boolean }): Promise<void> {
    if (this.closed) return;
    const waiting = this.cycles.reduce((n, c) => n + c.splitter.pendingCharacters + c.speaker.unsynthesizedCharacters, 0);
    const length = [...text].length;
    if (length > MAX_TEXT_CHARACTERS || waiting + length > MAX_PENDING_CHARACTERS) {
      throw new VoiceBusyError(`${waiting} characters are waiting to be spoken and at most ${MAX_PENDING_CHARACTERS} may wait (${MAX_TEXT_CHARACTERS} per message); send this text again once more of the reply has been spoken.`);
    }
    let cycle = this.cycles.find((c) => !c.ended && !c.done);
    if (!cycle) {
      const preempted = this.cycles.filter((c) => c.preemptible && !c.done);
      if (preempted.length) this.stop(preempted);
      cycle = new TalkCycle(this.nextId++, this.setup, options.interruptible, options.preemptible ?? false);
      this.cycles.push(cycle);
      cycle.finished = this.play(cycle);
    }
    await this.queue(cycle, cycle.splitter.push(text));
    if (last) {
      await this.queue(cycle, cycle.splitter.flush());
      cycle.ended = true;
      cycle.speaker.end();
    }
  }

  /** Stops these cycles now: their synthesis, their queued frames here and at the carrier. */
  private stop(cycles: TalkCycle[]): void {
    for (const cycle of cycles) cycle.stop.abort();
    this.cycles = this.cycles.filter((c) => !cycles.includes(c));
    this.out.paced.clear();
    this.framesQueued = this.out.paced.framesSent;
    this.out.clear();
  }

  /**
   * Plays audio that is not speech of text (a `play` file, DTMF tones) as a cycle of its own, after the ones
   * queued: `samples` at `sampleRate`, encoded to the phone leg's format, `loop` times (0 = until interrupted
   * or the call ends).
   */
  playAudio(samples: Float32Array, sampleRate: number, loop: number, interruptible: boolean): void {
    if (this.closed) return;
    const cycle = new TalkCycle(this.nextId++, this.setup, interruptible);
    cycle.ended = true;
    cycle.speaker.end();
    cycle.source = encodedAudio(this.setup.encoders, this.setup.format, samples, sampleRate, loop, cycle.stop.signal);
    this.cycles.push(cycle);
    cycle.finished = this.play(cycle);
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

  /** Ends every cycle now (the call is over); each settles what it sent. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.cycles.map((c) => c.finished);
    for (const cycle of this.cycles) cycle.stop.abort();
    await Promise.all(pending);
  }

  /** Holds each phrase's price, then queues it; on an empty balance the cycle stops and the call is told. */
  private async queue(cycle: TalkCycle, chunks: TextChunk[]): Promise<void> {
    const { ledger, charge } = this.setup;
    for (const chunk of chunks) {
      if (cycle.stop.signal.aborted) return;
      try {
        cycle.reservation ??= await ledger.reserve(charge, 0);
        await cycle.reservation.growTo(ledger.costOf(cycle.held + chunk.characters, ledger.priceOf('character', 'speech')));
      } catch (err) {
        if (!(err instanceof InsufficientQuotaError)) throw err;
        cycle.ended = true;
        cycle.speaker.end();
        this.out.quotaExhausted(err.message);
        return;
      }
      cycle.held += chunk.characters;
      cycle.speaker.say(chunk);
    }
  }

  /** Moves one cycle's audio to the pacer (after the cycles before it), then settles its bill. */
  private async play(cycle: TalkCycle): Promise<void> {
    const before = this.cycles.slice(0, -1).map((c) => c.finished);
    await Promise.all(before);
    const { frameBytes, silenceByte } = this.setup;
    const paced = this.out.paced;
    let markCount = 0;
    try {
      for await (const item of cycle.source) {
        if (cycle.stop.signal.aborted) break;
        cycle.addAlignments(item.alignments);
        for (const frame of cycle.frameOut(item.bytes, frameBytes)) this.queueFrame(cycle, frame);
        if (item.charactersComplete > cycle.sent) {
          const characters = item.charactersComplete;
          const name = `kuma-${cycle.id}-${markCount++}`;
          const ms = cycle.frames * paced.frameMs;
          paced.marker(() => {
            cycle.sent = Math.max(cycle.sent, characters);
            if (this.out.mark(name)) this.marks.set(name, { cycle, ms });
          });
        }
        while (paced.queuedFrames * paced.frameMs > MAX_QUEUED_MS && !cycle.stop.signal.aborted) await sleep(FRAME_MS * 5);
      }
      const last = cycle.stop.signal.aborted ? null : cycle.lastFrame(frameBytes, silenceByte);
      if (last) this.queueFrame(cycle, last);
      // The cycle is done once its frames are out (or it was cut).
      while (!paced.idle && !cycle.stop.signal.aborted) await sleep(FRAME_MS * 5);
    } catch (err) {
      if (!cycle.stop.signal.aborted) {
        // A voice model at capacity is load, not a fault: warn, never error.
        const level = isCapacityError(err) ? 'warn' : 'error';
        this.setup.logger[level]({ requestId: this.setup.charge.requestId, err: (err as Error).message }, level === 'warn' ? 'call voice refused: model at capacity' : 'call voice failed');
      }
    } finally {
      cycle.done = true;
      cycle.stop.abort();
      await this.settle(cycle);
      this.cycles = this.cycles.filter((c) => c !== cycle);
      this.out.cycleDone(cycle.sent);
    }
  }

  private queueFrame(cycle: TalkCycle, frame: Uint8Array): void {
    if (cycle.firstFrame < 0) {
      cycle.firstFrame = this.framesQueued;
      const first = this.out.firstAudio;
      if (first) this.out.paced.marker(first);
    }
    cycle.frames++;
    this.framesQueued++;
    this.out.paced.frame(frame);
  }

  private async settle(cycle: TalkCycle): Promise<void> {
    const reservation = cycle.reservation;
    if (!reservation) return;
    try {
      await reservation.settle([{ model: this.setup.model, kind: 'speech', unit: 'character', quantity: cycle.sent }]);
    } catch (err) {
      // The key was revoked before this cycle settled: by design nothing more is charged to it (the call ends).
      if (err instanceof KeyRevokedError) this.setup.logger.info({ requestId: this.setup.charge.requestId, keyId: err.keyId }, 'call speech not charged: the key was revoked');
      else this.setup.logger.error({ requestId: this.setup.charge.requestId, err: (err as Error).message }, 'recording call speech usage failed');
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
