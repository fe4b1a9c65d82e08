/**
 * What a realtime session takes in and puts out, independent of any wire protocol: the API layer's
 * protocol adapter parses client events into `SessionInput`s and formats `SessionOutput`s as events.
 * `ref` is the client's event id, carried to the error a refused input produces.
 */
import type { SessionUpdate } from './session-config.js';
import type { RealtimeInputError } from './errors.js';

export type SessionInput =
  | { kind: 'update'; update: SessionUpdate; ref?: string }
  | { kind: 'append'; audio: Uint8Array; ref?: string }
  | { kind: 'commit'; ref?: string }
  | { kind: 'clear'; ref?: string }
  /** Graceful end (translation `session.close`): the turn being spoken is committed, every item finishes. */
  | { kind: 'close'; ref?: string };

/** Why a session ended on its own: its balance ran out, its key was revoked, or the server failed it. */
export type FatalCode = 'insufficient_quota' | 'key_revoked' | 'server_error';

/**
 * Why a session closed: its client (the socket, or the call that owns it) is gone, its items all finished
 * after a graceful close, or a fatal error ended it.
 */
export type RealtimeCloseReason = 'client_gone' | 'finished' | FatalCode;

export interface ItemFailure {
  code: string;
  message: string;
}

export type SessionOutput =
  | { type: 'updated' }
  | { type: 'speech_started'; itemId: string; audioStartMs: number }
  | { type: 'speech_stopped'; itemId: string; audioEndMs: number }
  | { type: 'timeout_triggered'; itemId: string; audioStartMs: number; audioEndMs: number }
  | { type: 'committed'; itemId: string; previousItemId: string | null }
  | { type: 'cleared' }
  /** Source-language transcript text, append-only within the item (the first delta of an item has no leading space). */
  | { type: 'delta'; itemId: string; delta: string }
  | {
      type: 'completed';
      itemId: string;
      transcript: string;
      /** Billed seconds of the item's audio, as recorded in the ledger. */
      seconds: number;
      /** Translation sessions: the transcript in the target language, and the characters billed for it. */
      translation?: { language: string; text: string; characters: number };
    }
  | { type: 'failed'; itemId: string; error: ItemFailure }
  /**
   * Interim text stopped (`paused`: the server is too busy for the work that makes it; each turn's final
   * transcript still comes) or resumed. Sent when this changes, never while interims simply flow.
   */
  | { type: 'interims'; paused: boolean }
  /** A client event was refused; the session goes on. */
  | { type: 'rejected'; error: RealtimeInputError; input: SessionInput['kind']; ref?: string }
  /** The session cannot go on (balance exhausted, its key revoked, VAD lost); no output follows except `closed`. */
  | { type: 'fatal'; code: FatalCode; message: string }
  /** Every item is finished after a graceful close (or a fatal error): the adapter may close the socket. */
  | { type: 'closed' };
