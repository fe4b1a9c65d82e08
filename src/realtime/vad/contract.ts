/**
 * The contract between realtime sessions and voice-activity detection, so the session core and the VAD
 * scheduler can be built and tested apart. Implementations: vad-scheduler.ts (Silero windows of every
 * session batched into one model run per tick, in a worker) and turn-detector.ts (server_vad semantics).
 */

/** Scores the audio of many sessions; one channel per session. */
export interface VadService {
  /**
   * Opens a channel. `onScores(firstWindow, probabilities)` is called in order, window after window:
   * window i covers the channel's samples [512·i, 512·i + 512) at 16 kHz (32 ms each). `onError` is called
   * at most once, if the channel can no longer be scored (the model failed); no scores follow it.
   */
  open(onScores: (firstWindow: number, probabilities: Float32Array) => void, onError: (err: Error) => void): VadChannel;
  close(): Promise<void>;
}

export interface VadChannel {
  /** 16 kHz mono samples, in order, any length; a partial window waits for the rest. */
  push(samples: Float32Array): void;
  /** Stops scoring; pending windows are dropped and no callback follows. */
  close(): void;
}

/** OpenAI's `turn_detection: {type: "server_vad", …}` settings. */
export interface ServerVadOptions {
  /** Speech probability above which a window is speech (0–1; OpenAI's default 0.5). */
  threshold: number;
  /** Audio kept before the detected onset, part of the turn (default 300). */
  prefixPaddingMs: number;
  /** Silence that ends a turn (default 500). */
  silenceDurationMs: number;
}

/** Times are in the session's audio clock: milliseconds of audio received since the session began. */
export type TurnEvent =
  /** `audioStartMs` = onset − prefix padding, clamped to the start of the audio still in the buffer. */
  | { type: 'speech_started'; audioStartMs: number }
  /**
   * `audioEndMs` = the end of the silence that ended the turn; the turn's audio is [audioStartMs, audioEndMs).
   * `silenceStartMs` = where that silence began (the first window below the negative threshold): no speech
   * after it, as the VAD heard it.
   */
  | { type: 'speech_stopped'; audioEndMs: number; silenceStartMs?: number };
