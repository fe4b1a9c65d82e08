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
import { isCapacityError } from '../../engines/errors.js';
import { SessionLifecycle, type Session } from '../../primitives/session-lifecycle.js';
import { KeyRevokedError } from '../../store/store-errors.js';
import { RealtimeSession } from '../../realtime/realtime-session.js';
import { DEFAULT_SERVER_VAD, type SessionConfig, type TranslationTarget } from '../../realtime/session-config.js';
import type { SessionOutput } from '../../realtime/session-events.js';
import type { CallRecord } from '../../store/store.js';
import type { CallAudioFormat, CallStart } from '../carriers/contract.js';
import { CallVoice } from './call-voice.js';
import type { CallApp, CallCarrier, CallDeps, CallEndReason, CallIdentity } from './call-contract.js';
import { ReplyTranslator } from './reply-translator.js';
import { CallTally, ReplyLatency } from './call-tally.js';
import { bytesPerSecond, callSpeechFormat, silenceByteOf } from './call-audio-format.js';
import type { CallLanguage, CallSettings } from '../call-settings.js';

/** How long an ending call waits for the caller's last turn to be transcribed. */
const FINISH_HEARING_MS = 5_000;

const TARGET_OF: Record<CallLanguage, TranslationTarget | null> = { bam: null, fra: 'fra_Latn', eng: 'eng_Latn' };

export class CallSession implements Session<CallEndReason> {
  private readonly realtime: RealtimeSession;
  readonly voice: CallVoice;
  private translator: ReplyTranslator | null = null;
  /** Closed when the call's teardown begins: its signal stops the app side's work (relay link, play fetches, reply translation). */
  private readonly lifecycle = new SessionLifecycle<CallEndReason>();
  private readonly turnsStarted = new Map<string, number>();
  private readonly tally: CallTally;
  private readonly latency = new ReplyLatency();
  /** Why the call is ending, from the moment `close` is called: from then on it takes nothing more from the caller or the app. */
  private endReason: CallEndReason | null = null;
  private app: CallApp | null = null;
  /** App events from before the app side was connected. */
  private readonly waiting: Array<(app: CallApp) => void> = [];
  /** How the reply being translated may be cut short (its text arrives in pieces, its audio later). */
  private pendingOptions = { interruptible: true, preemptible: false };
  private record: CallRecord | null = null;
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
    // Nothing is charged to the call's key once it is revoked, whoever revoked it (the call then ends `key_revoked`).
    const charge = { requestId: identity.callId, accountId: identity.accountId, keyId: identity.keyId, requireActiveKey: true };
    this.tally = new CallTally({
      id: identity.callId,
      accountId: identity.accountId,
      keyId: identity.keyId,
      carrier: identity.carrier,
      carrierCallId: start.callId || null,
    });
    const config: SessionConfig = {
      format: inputFormatOf(start.format),
      model: deps.asr,
      language: null,
      prompt: null,
      target: TARGET_OF[settings.transcriptionLanguage],
      turnDetection: deps.vad ? DEFAULT_SERVER_VAD : null,
    };
    this.realtime = new RealtimeSession(
      { ledger: deps.ledger, charge, vad: deps.vad, translator: deps.mt, maxBufferSeconds: deps.maxBufferSeconds, logger: deps.logger },
      config,
      (o) => this.onHeard(o),
    );
    const frameMs = (frameBytes / bytesPerSecond(outboundFormat)) * 1000;
    const paced = deps.pacer.stream((frame) => carrier.media(frame), frameMs);
    this.voice = new CallVoice(
      {
        model: deps.tts.model,
        engine: deps.tts.engine,
        voice: {},
        speakable: deps.tts.speakable,
        encoders: deps.tts.encoders,
        format: callSpeechFormat(outboundFormat),
        frameBytes,
        silenceByte: silenceByteOf(outboundFormat),
        ledger: deps.ledger,
        charge,
        logger: deps.logger,
      },
      {
        paced,
        leadMs: deps.pacer.leadMs,
        mark: (name) => carrier.mark(name),
        clear: () => carrier.clear(),
        quotaExhausted: () => this.close('insufficient_quota'),
        cycleDone: (characters) => (this.tally.charactersSynthesized += characters),
        firstAudio: () => this.replyAudible(),
      },
    );
    this.setTtsLanguage(settings.ttsLanguage);
    // Hearing starts at once: a carrier streams from its start message on, while the app is still being dialled.
    this.realtime.start();
  }

  /** Connects the app side: what the call produced meanwhile (a turn, a key) is handed over first, in order. */
  open(app: CallApp): void {
    this.app = app;
    for (const event of this.waiting.splice(0)) event(app);
    if (this.settings.welcomeGreeting)
      void this.say(this.settings.welcomeGreeting, true, { interruptible: this.settings.welcomeGreetingInterruptible }).catch(() => {});
  }

  /** Caller audio, in the phone leg's codec. */
  media(audio: Uint8Array): void {
    if (this.endReason) return;
    this.realtime.input({ kind: 'append', audio });
  }

  dtmf(digit: string): void {
    if (this.endReason) return;
    if (this.voice.speaking && (this.settings.interruptible === 'dtmf' || this.settings.interruptible === 'any') && this.voice.interruptible) this.interrupt();
    this.toApp((app) => app.dtmf(digit));
  }

  mark(name: string): void {
    this.voice.onMark(name);
  }

  /**
   * App text to speak: in the app's TTS language (translated to Bambara first when that is French or
   * English). `last` ends the talk cycle.
   */
  async say(text: string, last: boolean, options: { interruptible?: boolean; preemptible?: boolean } = {}): Promise<void> {
    if (this.endReason) return;
    this.latency.replied();
    const interruptible = options.interruptible ?? this.settings.interruptible !== 'none';
    const preemptible = options.preemptible ?? false;
    if (this.translator) {
      this.pendingOptions = { interruptible, preemptible };
      return this.translator.push(text, last);
    }
    await this.voice.say(text, last, { interruptible, preemptible });
  }

  /** The app changed languages mid-call (ConversationRelay `language`). */
  setLanguages(languages: { tts?: CallLanguage; transcription?: CallLanguage }): void {
    if (languages.tts) this.setTtsLanguage(languages.tts);
    if (languages.transcription && languages.transcription !== this.settings.transcriptionLanguage) {
      this.settings = { ...this.settings, transcriptionLanguage: languages.transcription };
      this.realtime.input({ kind: 'update', update: { translationTarget: TARGET_OF[languages.transcription] } });
    }
  }

  /**
   * Ends the call: the voice stops, holds are settled, the app and carrier are told, the record is written.
   * In transcription mode the turn the caller was speaking is still transcribed and delivered (up to
   * FINISH_HEARING_MS): a caller who hangs up right after speaking has said something the app wants — unless
   * the call cannot pay for it (`insufficient_quota`) or its key was revoked (`key_revoked`: nothing more is
   * done or charged for it; the turn in progress is dropped). Meanwhile the call is closing: it takes nothing
   * more from the caller or the app, and is `closed` (its signal fired) once that turn was heard. Idempotent.
   */
  async close(reason: CallEndReason): Promise<void> {
    if (this.endReason) return;
    this.endReason = reason;
    if (this.settings.mode === 'transcription' && reason !== 'insufficient_quota' && reason !== 'key_revoked') await this.finishHearing();
    this.lifecycle.close(reason);
    this.realtime.close('client_gone');
    await this.voice.close(reason);
    if (reason !== 'caller_hangup') this.carrier.hangup(reason);
    try {
      this.record = await this.tally.finalRecord(this.deps.store, this.settings.mode, reason);
    } catch (err) {
      this.deps.logger.error({ requestId: this.identity.callId, err: (err as Error).message }, 'reading the call usage failed');
    }
    this.app?.ended(reason);
    this.deps.observer?.ended(reason);
    if (this.record)
      await this.deps.store
        .recordCall(this.record)
        .catch((err: Error) => this.deps.logger.error({ requestId: this.identity.callId, err: err.message }, 'recording the call failed'));
  }

  /** The call's figures so far (final once the call has ended). */
  summary(): CallRecord {
    return this.record ?? this.tally.recordOf(this.settings.mode, this.endReason ?? 'in_progress', 0);
  }

  private finishHearing(): Promise<void> {
    return new Promise((resolve) => {
      this.hearingFinished = resolve;
      this.realtime.input({ kind: 'close' });
      setTimeout(resolve, FINISH_HEARING_MS).unref();
    });
  }

  /** Aborted when the call closes. */
  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  private setTtsLanguage(language: CallLanguage): void {
    this.settings = { ...this.settings, ttsLanguage: language };
    this.translator?.reset();
    const source = TARGET_OF[language];
    if (!source || !this.deps.mt) {
      this.translator = null;
      return;
    }
    const charge = { requestId: this.identity.callId, accountId: this.identity.accountId, keyId: this.identity.keyId, requireActiveKey: true };
    this.translator = new ReplyTranslator(
      { engine: this.deps.mt.engine, model: this.deps.mt.id, source, ledger: this.deps.ledger, charge },
      this.lifecycle.signal,
      async (piece) => {
        this.tally.charactersTranslated += piece.characters;
        // The bilingual bridge's record of each reply: what the app wrote and what the caller hears.
        if (piece.original)
          this.deps.logger.info({ requestId: this.identity.callId, app: piece.original, spoken: piece.text.trim(), language }, 'call reply translated');
        await this.voice.say(piece.text, piece.last, this.pendingOptions);
      },
      (err) => {
        // The key was revoked (by another process, not yet swept): the reply is not charged, and the call ends.
        if (err instanceof KeyRevokedError) return void this.close('key_revoked');
        // A translation model at capacity is load, not a fault: warn, never error.
        this.deps.logger[isCapacityError(err) ? 'warn' : 'error'](
          { requestId: this.identity.callId, err: (err as Error).message },
          'translating the app reply failed',
        );
      },
    );
  }

  private toApp(event: (app: CallApp) => void): void {
    if (this.app) event(this.app);
    else this.waiting.push(event);
  }

  private replyAudible(): void {
    const seconds = this.latency.audible();
    if (seconds !== null) this.deps.observer?.replyLatency(seconds);
  }

  private interrupt(): void {
    this.deps.observer?.bargeIn();
    this.translator?.reset();
    const heard = this.voice.interrupt();
    if (heard) this.toApp((app) => app.interrupted(heard));
  }

  private onHeard(output: SessionOutput): void {
    if (output.type === 'closed') return this.hearingFinished?.();
    // While a call ends, its last turns are still delivered (finishHearing); nothing else is acted on.
    if (this.endReason && output.type !== 'completed') return;
    switch (output.type) {
      case 'speech_started':
        this.turnsStarted.set(output.itemId, output.audioStartMs);
        if (this.voice.speaking && (this.settings.interruptible === 'speech' || this.settings.interruptible === 'any') && this.voice.interruptible)
          this.interrupt();
        return;
      case 'speech_stopped':
        this.latency.speechStopped();
        return;
      case 'delta':
        // Interim text is the caller's Bambara; an app in another language gets only finals (translated).
        if (this.settings.transcriptionLanguage === 'bam') this.toApp((app) => app.interim(output.itemId, output.delta));
        return;
      case 'completed': {
        this.tally.turns++;
        this.tally.callerSeconds += output.seconds;
        if (output.translation) this.tally.charactersTranslated += output.translation.characters;
        const start = this.turnsStarted.get(output.itemId) ?? 0;
        this.turnsStarted.delete(output.itemId);
        const lang = this.settings.transcriptionLanguage;
        const text = output.translation ? output.translation.text : output.transcript;
        if (!output.transcript.trim()) return; // a noise with no words is not a turn for the app
        if (output.translation)
          this.deps.logger.info(
            { requestId: this.identity.callId, item: output.itemId, heard: output.transcript, app: output.translation.text, language: lang },
            'call turn translated',
          );
        this.latency.prompted();
        const turn = { itemId: output.itemId, text, lang, original: output.transcript, audioStartMs: start, audioEndMs: start + output.seconds * 1000 };
        this.toApp((app) => app.final(turn));
        return;
      }
      case 'failed':
        this.deps.logger.warn({ requestId: this.identity.callId, item: output.itemId, code: output.error.code }, 'a caller turn was not transcribed');
        return;
      case 'fatal':
        void this.close(output.code === 'server_error' ? 'error' : output.code);
        return;
      default:
        return;
    }
  }
}

function inputFormatOf(format: CallAudioFormat): SessionConfig['format'] {
  if (format.codec === 'pcmu') return { codec: 'g711_ulaw', rate: 8000 };
  if (format.codec === 'pcma') return { codec: 'g711_alaw', rate: 8000 };
  return { codec: 'pcm16', rate: format.sampleRate };
}
