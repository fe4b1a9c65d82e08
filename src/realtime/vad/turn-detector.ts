/**
 * OpenAI's `server_vad` turn detection over Silero window probabilities (32 ms windows at 16 kHz). Pure:
 * feed it what VadChannel.onScores gives, get speech_started / speech_stopped events in the session's audio
 * clock (window i covers [32·i, 32·i + 32) ms).
 *
 * Rules:
 *   - Speech starts at the first of `minSpeechWindows` consecutive windows at or above `threshold`
 *     (default 2 = 64 ms). One window alone is a click or a breath as often as speech; Silero's own offline
 *     rule drops speech under 250 ms, which would delay speech_started — what barge-in waits on — by as much.
 *     64 ms costs one window of latency and no audio: audioStartMs counts from the first window.
 *   - audioStartMs = onset − prefixPaddingMs, clamped to ≥ 0, ≥ the previous turn's audioEndMs and ≥ the
 *     start of the audio still in the buffer (reset()).
 *   - Speech stops after `silenceDurationMs` counted from the first window below `threshold − 0.15` (Silero's
 *     hysteresis); a window at or above `threshold` cancels that silence, a window in between neither starts
 *     nor cancels it. audioEndMs = the end of the window that completes the silence.
 *   - When window levels are given (dBFS), that silence must also be quiet: a window Silero scores below the
 *     threshold but as loud as the turn's speech (within LOUD_MARGIN_DB of its loudest window the model heard
 *     as speech) restarts the quiet count. Silero misses some voiced sounds — the demo voice's synthetic
 *     consonants score ≈ 0.02 for up to 0.7 s inside a word, and low-resource languages' phonemes can too —
 *     and a split there cuts a word into two turns (LiveKit at silence_duration_ms 350 saw a phantom second
 *     turn holding the phrase's tail). Loud non-speech (noise as loud as the voice) still ends the turn,
 *     LOUD_GRACE_MS later than quiet silence would: the cost is bounded.
 *   - Events alternate, starting with speech_started; times never go back.
 */
import type { ServerVadOptions, TurnEvent } from './contract.js';

export const WINDOW_MS = 32;
/** Silero's hysteresis: speech ends only below threshold − 0.15 (floored so threshold 0.1 still works). */
const HYSTERESIS = 0.15;
const MIN_NEGATIVE_THRESHOLD = 0.01;

export const DEFAULT_SERVER_VAD: ServerVadOptions = { threshold: 0.5, prefixPaddingMs: 300, silenceDurationMs: 500 };
/** A non-speech window this close (dB) to the turn's loudest speech window is loud: it does not count as quiet. */
export const LOUD_MARGIN_DB = 20;
/** Below this level (dBFS) a window is quiet whatever the turn's level (a very soft talker's room). */
const QUIET_FLOOR_DB = -55;
/** How much longer than `silenceDurationMs` loud non-speech may hold a turn open. */
export const LOUD_GRACE_MS = 1000;

export interface TurnDetectorOptions extends ServerVadOptions {
  /** Consecutive windows at or above the threshold that start speech (default 2). */
  minSpeechWindows?: number;
}

export class TurnDetector {
  private readonly threshold: number;
  private readonly negativeThreshold: number;
  private readonly minSpeechWindows: number;
  private readonly prefixPaddingMs: number;
  private readonly silenceDurationMs: number;
  /** Next window expected; windows before it are ignored (already seen, or cleared by reset). */
  private nextWindow = 0;
  private inSpeech = false;
  /** First window of the current run at or above the threshold (while not in speech), or -1. */
  private runStart = -1;
  /** First window of the pending silence (while in speech), or -1. */
  private silenceStart = -1;
  /** First window of the quiet part of the pending silence (since its last loud window), or -1. */
  private quietStart = -1;
  /** The level (dBFS) of the loudest window of this turn scored as speech (-Infinity: none, or no levels). */
  private turnPeakDb = -Infinity;
  /** No turn may reach back before this (ms): the previous turn's end, or the buffer's start. */
  private floorMs = 0;
  /** End (ms) of the last window at or above the threshold, for idle timeouts. */
  private lastSpeechEndMs = 0;

  constructor(options: TurnDetectorOptions) {
    this.threshold = options.threshold;
    this.negativeThreshold = Math.max(options.threshold - HYSTERESIS, MIN_NEGATIVE_THRESHOLD);
    this.minSpeechWindows = Math.max(1, options.minSpeechWindows ?? 2);
    this.prefixPaddingMs = Math.max(0, options.prefixPaddingMs);
    this.silenceDurationMs = Math.max(0, options.silenceDurationMs);
  }

  /** Whether a turn is open (speech_started sent, speech_stopped not yet). */
  get speaking(): boolean {
    return this.inSpeech;
  }

  /** Audio time (ms) up to which windows have been seen. */
  get seenMs(): number {
    return this.nextWindow * WINDOW_MS;
  }

  /**
   * Audio (ms) since speech was last heard (or since the start / the last reset); 0 while a turn is open.
   * A session's idle timeout compares this with `idle_timeout_ms`.
   */
  get silentForMs(): number {
    return this.inSpeech ? 0 : Math.max(0, this.seenMs - this.lastSpeechEndMs);
  }

  /**
   * Takes the probabilities of windows firstWindow, firstWindow + 1, …; returns the events they cause.
   * `levels` (optional): the same windows' levels in dBFS; without them every non-speech window is quiet.
   */
  feed(firstWindow: number, probabilities: ArrayLike<number>, levels?: ArrayLike<number>): TurnEvent[] {
    const events: TurnEvent[] = [];
    for (let i = 0; i < probabilities.length; i++) {
      const window = firstWindow + i;
      if (window < this.nextWindow) continue;
      // A gap (windows never scored) counts as silence: nothing was heard there.
      if (window > this.nextWindow) this.runStart = -1;
      this.nextWindow = window + 1;
      const event = this.step(window, probabilities[i]!, levels ? levels[i]! : -Infinity);
      if (event) events.push(event);
    }
    return events;
  }

  /**
   * Forgets any turn in progress (input_audio_buffer.clear, or a manual commit): the next turn starts
   * afresh and its padding reaches back no further than `bufferStartMs` (default: the audio seen so far).
   * Windows ending at or before it are ignored.
   */
  reset(bufferStartMs = this.seenMs): void {
    this.inSpeech = false;
    this.runStart = -1;
    this.silenceStart = -1;
    this.quietStart = -1;
    this.turnPeakDb = -Infinity;
    this.floorMs = Math.max(this.floorMs, bufferStartMs);
    this.lastSpeechEndMs = Math.max(this.lastSpeechEndMs, bufferStartMs);
    this.nextWindow = Math.max(this.nextWindow, Math.ceil(bufferStartMs / WINDOW_MS));
  }

  private step(window: number, p: number, levelDb: number): TurnEvent | null {
    const startMs = window * WINDOW_MS;
    const endMs = startMs + WINDOW_MS;
    if (p >= this.threshold) this.lastSpeechEndMs = endMs;
    if (!this.inSpeech) {
      if (p < this.threshold) {
        this.runStart = -1;
        this.turnPeakDb = -Infinity;
        return null;
      }
      if (this.runStart < 0) this.runStart = window;
      this.turnPeakDb = Math.max(this.turnPeakDb, levelDb);
      if (window - this.runStart + 1 < this.minSpeechWindows) return null;
      this.inSpeech = true;
      this.silenceStart = -1;
      this.quietStart = -1;
      const onsetMs = this.runStart * WINDOW_MS;
      this.runStart = -1;
      return { type: 'speech_started', audioStartMs: Math.max(0, this.floorMs, onsetMs - this.prefixPaddingMs) };
    }
    if (p >= this.threshold) {
      this.silenceStart = -1;
      this.quietStart = -1;
      this.turnPeakDb = Math.max(this.turnPeakDb, levelDb);
      return null;
    }
    if (p < this.negativeThreshold && this.silenceStart < 0) this.silenceStart = window;
    if (this.silenceStart < 0) return null;
    const loud = levelDb > QUIET_FLOOR_DB && levelDb > this.turnPeakDb - LOUD_MARGIN_DB;
    if (loud) this.quietStart = -1;
    else if (this.quietStart < 0) this.quietStart = window;
    const quietEnough = this.quietStart >= 0 && endMs - this.quietStart * WINDOW_MS >= this.silenceDurationMs;
    const silentTooLong = endMs - this.silenceStart * WINDOW_MS >= this.silenceDurationMs + LOUD_GRACE_MS;
    if (quietEnough || silentTooLong) {
      // Where no speech follows, as the VAD heard it: the quiet part's start. After loud non-speech, none is
      // known (it may have been speech the model missed), so the whole turn is heard.
      const silenceStartMs = quietEnough ? this.quietStart * WINDOW_MS : undefined;
      this.inSpeech = false;
      this.silenceStart = -1;
      this.quietStart = -1;
      this.turnPeakDb = -Infinity;
      this.floorMs = Math.max(this.floorMs, endMs);
      return { type: 'speech_stopped', audioEndMs: endMs, ...(silenceStartMs !== undefined ? { silenceStartMs } : {}) };
    }
    return null;
  }
}
