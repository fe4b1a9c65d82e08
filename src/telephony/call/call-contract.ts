/**
 * The call core's edges: what a call tells its application (CallApp), what it sends its carrier (CallCarrier),
 * who it is (CallIdentity), what it needs (CallDeps), who watches it (CallObserver), and why it ends
 * (CallEndReason).
 */
import type { Ledger } from '../../billing/ledger.js';
import type { Logger } from '../../observability/logger.js';
import type { PhraseEngine } from '../../pipeline/phrase-synthesis.js';
import type { SpeechModel } from '../../realtime/session-config.js';
import type { VadService } from '../../realtime/vad/contract.js';
import type { Store } from '../../store/store.js';
import type { CallLanguage } from '../call-settings.js';
import type { Interruption } from './call-voice.js';
import type { FramePacer } from './frame-pacer.js';

/**
 * Why a call ended: its record's end reason, its `call.ended` webhook's, its metrics label, and the close
 * reason of its carrier stream when Kuma hangs up.
 */
export type CallEndReason =
  | 'caller_hangup'
  | 'shutdown'
  | 'app_ended'
  | 'app_disconnected'
  | 'app_unreachable'
  | 'insufficient_quota'
  | 'key_revoked'
  /** The server failed the call (its hearing could not go on, or its stream never started). */
  | 'error'
  // The carrier stream, once its call had started, sent what no carrier sends, or the server failed it.
  | 'malformed_frame'
  | 'frame_too_big'
  | 'server_error';

export interface CallerTurn {
  itemId: string;
  /** In the app's language (the translation when the app does not speak Bambara). */
  text: string;
  lang: CallLanguage;
  /** The caller's own words, in Bambara (the same as `text` for a Bambara app). */
  original: string;
  audioStartMs: number;
  audioEndMs: number;
}

/** What the call tells its application, whatever protocol carries it. */
export interface CallApp {
  interim(itemId: string, text: string): void;
  final(turn: CallerTurn): void;
  dtmf(digit: string): void;
  interrupted(interruption: Interruption): void;
  /** The call is over; nothing follows. */
  ended(reason: CallEndReason): void;
}

/** What the call sends to the carrier, already in its wire format (the adapter's frames). */
export interface CallCarrier {
  media(frame: Uint8Array): boolean;
  /** false: this carrier has no marks. */
  mark(name: string): boolean;
  clear(): void;
  /** Ends the call from Kuma's side (closes the media stream). */
  hangup(reason: CallEndReason): void;
}

export interface CallObserver {
  bargeIn(): void;
  /** Relay mode: end of the caller's speech → first reply frame, less the app's time (prompt → first reply text). */
  replyLatency(seconds: number): void;
  ended(reason: CallEndReason): void;
}

export interface CallDeps {
  observer?: CallObserver;
  store: Store;
  ledger: Ledger;
  logger: Logger;
  pacer: FramePacer;
  vad: VadService | null;
  asr: SpeechModel;
  tts: { model: string; engine: PhraseEngine; speakable: ReadonlySet<string> | null };
  /** The translation model (bilingual calls). */
  mt: SpeechModel | null;
  maxBufferSeconds: number;
}

export interface CallIdentity {
  callId: string;
  accountId: string;
  keyId: string;
  carrier: string;
}
