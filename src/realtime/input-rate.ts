/**
 * How fast a realtime session takes audio (README "Realtime", input rate): at most `maxRate` seconds of
 * audio per second of wall time, after a burst of `burstSeconds` — a token bucket counted in seconds of
 * audio, full when the session starts and refilled at `maxRate` a second. An append the bucket cannot cover
 * is refused whole (nothing of it is taken), so the client knows exactly which append to send again.
 *
 * Why a bound: a server_vad session decides what becomes an item from the VAD's scores, and the VAD scores
 * a session's audio at a bounded pace (vad-scheduler.ts: 0.5 s of audio per 32 ms tick, ≈ 15× real time
 * on an idle machine, less on a busy one). 4× leaves that margin on a busy machine; the burst lets a client
 * send a short recording (or catch up after a network stall) at once.
 *
 * Why refuse rather than pace: the OpenAI Realtime protocol has no flow control, and this transport cannot
 * stop reading one WebSocket (uWS has no per-socket pause), so pacing would mean holding the audio in server
 * memory without bound. An `error` event naming the refused append is something every client can act on.
 */
import { RealtimeInputError } from './errors.js';

export interface InputRateOptions {
  /** Seconds of audio taken per second of wall time, in the long run. */
  maxRate: number;
  /** Seconds of audio that may arrive at once (the bucket's size). */
  burstSeconds: number;
}

export const DEFAULT_INPUT_RATE: InputRateOptions = { maxRate: 4, burstSeconds: 60 };

/** A microsecond of audio: absorbs float noise, so a client sending exactly at the rate is never refused. */
const TOLERANCE_SECONDS = 1e-6;

export class InputRateBound {
  private tokens: number;
  private last: number;

  constructor(
    readonly options: InputRateOptions,
    /** Wall clock in ms (performance.now by default). */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = options.burstSeconds;
    this.last = now();
  }

  /** Takes `seconds` of audio and returns true, or returns false and takes nothing when that is over the bound. */
  take(seconds: number): boolean {
    const now = this.now();
    const { maxRate, burstSeconds } = this.options;
    this.tokens = Math.min(burstSeconds, this.tokens + (Math.max(0, now - this.last) / 1000) * maxRate);
    this.last = now;
    if (seconds > this.tokens + TOLERANCE_SECONDS) return false;
    this.tokens -= seconds;
    return true;
  }
}

/**
 * Refuses (throws RealtimeInputError `input_audio_rate_exceeded`) an append of `seconds` that is over the rate
 * bound, larger than the burst, or that would leave more than `maxWaitingSeconds` of audio waiting for the VAD
 * (`waitingSeconds` now, null without a VAD: a machine too busy to score at the bound's pace). The session goes
 * on either way.
 */
export function admitAppend(bound: InputRateBound, seconds: number, waitingSeconds: number | null, maxWaitingSeconds: number): void {
  const { maxRate, burstSeconds } = bound.options;
  const pace = `Send audio at most ${maxRate}× real time (after a burst of ${burstSeconds} s), and send this append again.`;
  if (seconds > burstSeconds) {
    throw new RealtimeInputError(
      'input_audio_rate_exceeded',
      `This append holds ${seconds.toFixed(1)} s of audio; one append may hold at most ${burstSeconds} s. It was not taken: split it.`,
    );
  }
  if (waitingSeconds !== null && waitingSeconds + seconds > maxWaitingSeconds) {
    throw new RealtimeInputError(
      'input_audio_rate_exceeded',
      `${waitingSeconds.toFixed(1)} s of this session's audio are still waiting for voice-activity detection (at most ${maxWaitingSeconds} s may wait): this append was not taken. ${pace}`,
    );
  }
  if (!bound.take(seconds)) {
    throw new RealtimeInputError(
      'input_audio_rate_exceeded',
      `Audio is arriving faster than ${maxRate}× real time: this append (${Math.round(seconds * 1000)} ms of audio) was not taken. ${pace}`,
    );
  }
}
