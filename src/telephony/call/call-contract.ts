/**
 * The call core's edges: what a call tells its application (CallApp), what it sends its carrier (CallCarrier),
 * who it is (CallIdentity), what it needs (CallDeps) and who watches it (CallObserver).
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
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';

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
  ended(reason: string): void;
}

/** What the call sends to the carrier, already in its wire format (the adapter's frames). */
export interface CallCarrier {
  media(frame: Uint8Array): boolean;
  /** false: this carrier has no marks. */
  mark(name: string): boolean;
  clear(): void;
  /** Ends the call from Kuma's side (closes the media stream). */
  hangup(reason: string): void;
}

export interface CallObserver {
  bargeIn(): void;
  /** Relay mode: end of the caller's speech → first reply frame, less the app's time (prompt → first reply text). */
  replyLatency(seconds: number): void;
  ended(reason: string): void;
}

export interface CallDeps {
  observer?: CallObserver;
  store: Store;
  ledger: Ledger;
  logger: Logger;
  pacer: FramePacer;
  vad: VadService | null;
  asr: SpeechModel;
  tts: { model: string; engine: PhraseEngine; speakable: ReadonlySet<string> | null; encoders: EncoderSource };
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
