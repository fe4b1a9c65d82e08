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
 *   - Events alternate, starting with speech_started; times never go back.
 */
import type { ServerVadOptions, TurnEvent } from './contract.js';

export const WINDOW_MS = 32;
/** Silero's hysteresis: speech ends only below threshold − 0.15 (floored so threshold 0.1 still works). */
const HYSTERESIS = 0.15;
const MIN_NEGATIVE_THRESHOLD = 0.01;

export const DEFAULT_SERVER_VAD: ServerVadOptions = { threshold: 0.5, prefixPaddingMs: 300, silenceDurationMs: 500 };

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

  /** Takes the probabilities of windows firstWindow, firstWindow + 1, …; returns the events they cause. */
  feed(firstWindow: number, probabilities: ArrayLike<number>): TurnEvent[] {
    const events: TurnEvent[] = [];
    for (let i = 0; i < probabilities.length; i++) {
      const window = firstWindow + i;
      if (window < this.nextWindow) continue;
      // A gap (windows never scored) counts as silence: nothing was heard there.
      if (window > this.nextWindow) this.runStart = -1;
      this.nextWindow = window + 1;
      const event = this.step(window, probabilities[i]!);
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
    this.floorMs = Math.max(this.floorMs, bufferStartMs);
    this.lastSpeechEndMs = Math.max(this.lastSpeechEndMs, bufferStartMs);
    this.nextWindow = Math.max(this.nextWindow, Math.ceil(bufferStartMs / WINDOW_MS));
  }

  private step(window: number, p: number): TurnEvent | null {
    const startMs = window * WINDOW_MS;
    const endMs = startMs + WINDOW_MS;
    if (p >= this.threshold) this.lastSpeechEndMs = endMs;
    if (!this.inSpeech) {
      if (p < this.threshold) {
        this.runStart = -1;
        return null;
      }
      if (this.runStart < 0) this.runStart = window;
      if (window - this.runStart + 1 < this.minSpeechWindows) return null;
      this.inSpeech = true;
      this.silenceStart = -1;
      const onsetMs = this.runStart * WINDOW_MS;
      this.runStart = -1;
      return { type: 'speech_started', audioStartMs: Math.max(0, this.floorMs, onsetMs - this.prefixPaddingMs) };
    }
    if (p >= this.threshold) {
      this.silenceStart = -1;
      return null;
    }
    if (p < this.negativeThreshold && this.silenceStart < 0) this.silenceStart = window;
    if (this.silenceStart >= 0 && endMs - this.silenceStart * WINDOW_MS >= this.silenceDurationMs) {
      const silenceStartMs = this.silenceStart * WINDOW_MS;
      this.inSpeech = false;
      this.silenceStart = -1;
      this.floorMs = Math.max(this.floorMs, endMs);
      return { type: 'speech_stopped', audioEndMs: endMs, silenceStartMs };
    }
    return null;
  }
}
