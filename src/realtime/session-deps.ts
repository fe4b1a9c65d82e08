/**
 * What a realtime session is given by whoever opens it (the realtime socket, a phone call): the ledger and
 * whose account it charges, the VAD and translation models, its bounds, and an observer for the metrics.
 */
import type { ChargeContext, Ledger } from '../billing/ledger.js';
import type { Logger } from '../observability/logger.js';
import type { InputRateOptions } from './input-rate.js';
import type { SpeechModel } from './session-config.js';
import type { VadService } from './vad/contract.js';

export interface SessionObserver {
  turnDetected(): void;
  /** A VAD turn's transcript went out this long after its speech_stopped. */
  turnCompleted(seconds: number): void;
  /** A chunk of a turn was encoded: small while the model had a free place, full-size, or the final's. */
  chunk?(kind: 'eager' | 'full' | 'final'): void;
  /** An item got `failed` with this code. */
  itemFailed?(code: string): void;
}

export interface RealtimeSessionDeps {
  ledger: Ledger;
  charge: ChargeContext;
  /** null: this server has no VAD model, server_vad is refused. */
  vad: VadService | null;
  /** The translation model (used when the session has a target language). */
  translator: SpeechModel | null;
  maxBufferSeconds: number;
  /** The input rate bound (default DEFAULT_INPUT_RATE: 4× real time after a 60 s burst). */
  inputRate?: InputRateOptions;
  /** Wall clock in ms for the input rate bound (default performance.now). */
  now?: () => number;
  /**
   * Resolves true once the outputs emitted so far have left the process toward the client (written to the
   * network), false when the client is gone first. An item is charged only after its `completed` event got
   * that far, so a crash never charges a transcript the client did not get. Absent: at once.
   */
  delivered?: () => Promise<boolean>;
  /** Where a charge that could not be recorded is reported (the transcript was delivered; it is not charged). */
  logger?: Logger;
  observer?: SessionObserver;
  /**
   * An item whose transcript is not out this long after it was committed gets `failed` with the code
   * `transcription_timeout` instead, uncharged (default FINAL_TIMEOUT_MS): on an overloaded server a caller
   * hears that the turn was lost rather than waiting for it without end.
   */
  finalTimeoutMs?: number;
  /**
   * Asked before each interim re-decode of a turn (absent: always allowed). The server answers no while the
   * machine is busy: interim deltas are a courtesy, and on a saturated machine their CPU is what voice-activity
   * detection and final transcripts — what callers wait for — would miss.
   */
  interimAllowed?: () => boolean;
}
