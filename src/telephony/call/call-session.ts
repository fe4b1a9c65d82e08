/**
 * One phone call, free of any carrier's or application's wire format: caller audio in (the phone leg's codec
 * bytes), caller turns out (interim and final transcripts, in the app's language), app text in, paced voice
 * out. Carrier adapters (carriers/) and the app side (relay-bridge.ts for ConversationRelay apps,
 * transcription-sink.ts for webhooks) are thin layers over it.
 *
 * - Hearing: a realtime session (src/realtime) with server VAD on the phone leg's format; with an app
 *   language of French or English, each final turn is translated there (banjugu-1) and billed per turn.
 * - Speaking: CallVoice (call-voice.ts) over the shared FramePacer; app text in French or English is first
 *   translated to Bambara (reply-translator.ts).
 * - Barge-in: caller speech that starts while the voice is playing, when the call and the playing cycle are
 *   interruptible, stops the voice (carrier `clear`) and tells the app what was heard.
 * - The record: turns, caller seconds, characters, cost (from the ledger rows under the call's id), reason.
 */
import type { Ledger } from '../../billing/ledger.js';
import type { Logger } from '../../observability/logger.js';
import type { PhraseEngine } from '../../pipeline/phrase-synthesis.js';
import { RealtimeSession } from '../../realtime/realtime-session.js';
import { DEFAULT_SERVER_VAD, type SessionConfig, type SpeechModel, type TranslationTarget } from '../../realtime/session-config.js';
import type { SessionOutput } from '../../realtime/session-events.js';
import type { VadService } from '../../realtime/vad/contract.js';
import type { CallRecord, Store } from '../../store/store.js';
import type { CallAudioFormat, CallStart } from '../carriers/contract.js';
import { CallVoice, type Interruption } from './call-voice.js';
import type { FramePacer } from './frame-pacer.js';
import { ReplyTranslator } from './reply-translator.js';
import { bytesPerSecond, callSpeechFormat, silenceByteOf } from './call-audio-format.js';
import type { CallLanguage, CallSettings } from '../call-settings.js';

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

/** How long an ending call waits for the caller's last turn to be transcribed. */
const FINISH_HEARING_MS = 5_000;

const TARGET_OF: Record<CallLanguage, TranslationTarget | null> = { bam: null, fra: 'fra_Latn', eng: 'eng_Latn' };

export class CallSession {
  private readonly realtime: RealtimeSession;
  readonly voice: CallVoice;
  private translator: ReplyTranslator | null = null;
  private readonly cancel = new AbortController();
  private readonly startedAt = new Date();
  private readonly turnsStarted = new Map<string, number>();
  private turns = 0;
  private callerSeconds = 0;
  private charactersSynthesized = 0;
  private charactersTranslated = 0;
  private endReason: string | null = null;
  private app: CallApp | null = null;
  /** Whether the reply being translated may be interrupted (its text arrives in pieces, its audio later). */
  private pendingInterruptible = true;
  private record: CallRecord | null = null;
  /** For the reply latency (performance.now()): the last end of caller speech, the prompt it led to, the reply's first text. */
  private latency: { stoppedAt: number; promptAt: number; textAt: number } | null = null;
  private lastStoppedAt = Number.NaN;
  private hearingFinished: (() => void) | null = null;

  constructor(
    private readonly deps: CallDeps,
    readonly identity: CallIdentity,
    readonly start: CallStart,
    private settings: CallSettings,
    private readonly carrier: CallCarrier,
    outboundFormat: CallAudioFormat,
    frameBytes: number,
  ) {
    const charge = { requestId: identity.callId, accountId: identity.accountId, keyId: identity.keyId };
    const config: SessionConfig = {
      format: inputFormatOf(start.format),
      model: deps.asr,
      language: null,
      prompt: null,
      target: TARGET_OF[settings.transcriptionLanguage],
      turnDetection: deps.vad ? DEFAULT_SERVER_VAD : null,
    };
    this.realtime = new RealtimeSession({ ledger: deps.ledger, charge, vad: deps.vad, translator: deps.mt, maxBufferSeconds: deps.maxBufferSeconds }, config, (o) => this.onHeard(o));
    const frameMs = (frameBytes / bytesPerSecond(outboundFormat)) * 1000;
    const paced = deps.pacer.stream((frame) => carrier.media(frame), frameMs);
    this.voice = new CallVoice(
      { model: deps.tts.model, engine: deps.tts.engine, voice: {}, speakable: deps.tts.speakable, format: callSpeechFormat(outboundFormat), frameBytes, silenceByte: silenceByteOf(outboundFormat), ledger: deps.ledger, charge, logger: deps.logger },
      {
        paced,
        leadMs: deps.pacer.leadMs,
        mark: (name) => carrier.mark(name),
        clear: () => carrier.clear(),
        quotaExhausted: () => this.end('insufficient_quota'),
        cycleDone: (characters) => (this.charactersSynthesized += characters),
        firstAudio: () => this.replyAudible(),
      },
    );
    this.setTtsLanguage(settings.ttsLanguage);
  }

  /** Starts hearing; the app side receives the call's events from now on. */
  open(app: CallApp): void {
    this.app = app;
    this.realtime.start();
    if (this.settings.welcomeGreeting) void this.say(this.settings.welcomeGreeting, true, { interruptible: this.settings.welcomeGreetingInterruptible });
  }

  /** Caller audio, in the phone leg's codec. */
  media(audio: Uint8Array): void {
    // Before open() the relay app is still being dialled and hearing has not started: the audio is dropped.
    if (this.endReason || !this.app) return;
    this.realtime.input({ kind: 'append', audio });
  }

  dtmf(digit: string): void {
    if (this.endReason) return;
    if (this.voice.speaking && (this.settings.interruptible === 'dtmf' || this.settings.interruptible === 'any') && this.voice.interruptible) this.interrupt();
    this.app?.dtmf(digit);
  }

  mark(name: string): void {
    this.voice.onMark(name);
  }

  /**
   * App text to speak: in the app's TTS language (translated to Bambara first when that is French or
   * English). `last` ends the talk cycle.
   */
  async say(text: string, last: boolean, options: { interruptible?: boolean } = {}): Promise<void> {
    if (this.endReason) return;
    if (this.latency && Number.isNaN(this.latency.textAt)) this.latency.textAt = performance.now();
    const interruptible = options.interruptible ?? this.settings.interruptible !== 'none';
    if (this.translator) {
      this.pendingInterruptible = interruptible;
      return this.translator.push(text, last);
    }
    await this.voice.say(text, last, interruptible);
  }

  /** The app changed languages mid-call (ConversationRelay `language`). */
  setLanguages(languages: { tts?: CallLanguage; transcription?: CallLanguage }): void {
    if (languages.tts) this.setTtsLanguage(languages.tts);
    if (languages.transcription && languages.transcription !== this.settings.transcriptionLanguage) {
      this.settings = { ...this.settings, transcriptionLanguage: languages.transcription };
      this.realtime.input({ kind: 'update', update: { language: TARGET_OF[languages.transcription] ?? 'bam_Latn' } });
    }
  }

  /**
   * Ends the call: the voice stops, holds are settled, the app and carrier are told, the record is written.
   * In transcription mode the turn the caller was speaking is still transcribed and delivered (up to
   * FINISH_HEARING_MS): a caller who hangs up right after speaking has said something the app wants.
   */
  async end(reason: string): Promise<void> {
    if (this.endReason) return;
    this.endReason = reason;
    if (this.settings.mode === 'transcription' && reason !== 'insufficient_quota') await this.finishHearing();
    this.cancel.abort();
    this.realtime.abort();
    await this.voice.close();
    if (reason !== 'caller_hangup') this.carrier.hangup(reason);
    try {
      this.record = await this.buildRecord(reason);
    } catch (err) {
      this.deps.logger.error({ requestId: this.identity.callId, err: (err as Error).message }, 'reading the call usage failed');
    }
    this.app?.ended(reason);
    this.deps.observer?.ended(reason);
    if (this.record) await this.deps.store.recordCall(this.record).catch((err: Error) => this.deps.logger.error({ requestId: this.identity.callId, err: err.message }, 'recording the call failed'));
  }

  /** The call's figures so far (final once the call has ended). */
  summary(): CallRecord {
    return this.record ?? this.recordOf(this.endReason ?? 'in_progress', 0);
  }

  private finishHearing(): Promise<void> {
    return new Promise((resolve) => {
      this.hearingFinished = resolve;
      this.realtime.input({ kind: 'close' });
      setTimeout(resolve, FINISH_HEARING_MS).unref();
    });
  }

  /** Aborted when the call ends. */
  get signal(): AbortSignal {
    return this.cancel.signal;
  }

  get ended(): boolean {
    return this.endReason !== null;
  }

  private setTtsLanguage(language: CallLanguage): void {
    this.settings = { ...this.settings, ttsLanguage: language };
    this.translator?.reset();
    const source = TARGET_OF[language];
    if (!source || !this.deps.mt) {
      this.translator = null;
      return;
    }
    const charge = { requestId: this.identity.callId, accountId: this.identity.accountId, keyId: this.identity.keyId };
    this.translator = new ReplyTranslator(
      { engine: this.deps.mt.engine, model: this.deps.mt.id, source, ledger: this.deps.ledger, charge },
      this.cancel.signal,
      async (piece) => {
        this.charactersTranslated += piece.characters;
        await this.voice.say(piece.text, piece.last, this.pendingInterruptible);
      },
      (err) => this.deps.logger.error({ requestId: this.identity.callId, err: (err as Error).message }, 'translating the app reply failed'),
    );
  }

  private replyAudible(): void {
    const l = this.latency;
    if (!l || Number.isNaN(l.textAt)) return;
    this.latency = null;
    this.deps.observer?.replyLatency((l.promptAt - l.stoppedAt + (performance.now() - l.textAt)) / 1000);
  }

  private interrupt(): void {
    this.deps.observer?.bargeIn();
    this.translator?.reset();
    const heard = this.voice.interrupt();
    if (heard) this.app?.interrupted(heard);
  }

  private onHeard(output: SessionOutput): void {
    if (output.type === 'closed') return this.hearingFinished?.();
    // While a call ends, its last turns are still delivered (finishHearing); nothing else is acted on.
    if (this.endReason && output.type !== 'completed') return;
    switch (output.type) {
      case 'speech_started':
        this.turnsStarted.set(output.itemId, output.audioStartMs);
        if (this.voice.speaking && (this.settings.interruptible === 'speech' || this.settings.interruptible === 'any') && this.voice.interruptible) this.interrupt();
        return;
      case 'speech_stopped':
        this.lastStoppedAt = performance.now();
        return;
      case 'delta':
        // Interim text is the caller's Bambara; an app in another language gets only finals (translated).
        if (this.settings.transcriptionLanguage === 'bam') this.app?.interim(output.itemId, output.delta);
        return;
      case 'completed': {
        this.turns++;
        this.callerSeconds += output.seconds;
        if (output.translation) this.charactersTranslated += output.translation.characters;
        const start = this.turnsStarted.get(output.itemId) ?? 0;
        this.turnsStarted.delete(output.itemId);
        const lang = this.settings.transcriptionLanguage;
        const text = output.translation ? output.translation.text : output.transcript;
        if (!output.transcript.trim()) return; // a noise with no words is not a turn for the app
        if (!Number.isNaN(this.lastStoppedAt)) this.latency = { stoppedAt: this.lastStoppedAt, promptAt: performance.now(), textAt: Number.NaN };
        this.app?.final({ itemId: output.itemId, text, lang, original: output.transcript, audioStartMs: start, audioEndMs: start + output.seconds * 1000 });
        return;
      }
      case 'failed':
        this.deps.logger.warn({ requestId: this.identity.callId, item: output.itemId, code: output.error.code }, 'a caller turn was not transcribed');
        return;
      case 'fatal':
        void this.end(output.code === 'insufficient_quota' ? 'insufficient_quota' : 'error');
        return;
      default:
        return;
    }
  }

  private async buildRecord(reason: string): Promise<CallRecord> {
    const rows = await this.deps.store.listUsage({ requestId: this.identity.callId });
    return this.recordOf(reason, rows.reduce((sum, r) => sum + r.costMicros, 0));
  }

  private recordOf(reason: string, costMicros: number): CallRecord {
    const endedAt = new Date();
    return {
      id: this.identity.callId,
      accountId: this.identity.accountId,
      keyId: this.identity.keyId,
      carrier: this.identity.carrier,
      mode: this.settings.mode,
      carrierCallId: this.start.callId || null,
      startedAt: this.startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      durationMs: endedAt.getTime() - this.startedAt.getTime(),
      turns: this.turns,
      callerSeconds: this.callerSeconds,
      charactersSynthesized: this.charactersSynthesized,
      charactersTranslated: this.charactersTranslated,
      costMicros,
      endReason: reason,
    };
  }
}

function inputFormatOf(format: CallAudioFormat): SessionConfig['format'] {
  if (format.codec === 'pcmu') return { codec: 'g711_ulaw', rate: 8000 };
  if (format.codec === 'pcma') return { codec: 'g711_alaw', rate: 8000 };
  return { codec: 'pcm16', rate: format.sampleRate };
}
