/**
 * Voice relay mode: the call's app side is a ConversationRelay application that Kuma dials (relay/
 * relay-link.ts). Kuma sends what Twilio's ConversationRelay sends — `setup` first, then a `prompt` per final
 * caller turn, `dtmf`, `interrupt` with what the caller heard — and acts on what the app answers: `text`
 * tokens are spoken as they arrive, `language` switches languages, `sendDigits` plays DTMF tones, `play`
 * plays an audio file, `end` ends the call (its handoffData is logged with the call).
 *
 * Bilingual bridge: with a French or English app, `prompt.voicePrompt` is the translation and
 * `prompt.original` carries the caller's Bambara words; the app's replies are translated before they are
 * spoken (call-session.ts).
 */
import type { Logger } from '../../observability/logger.js';
import { RelayLink, type PinnedAddress } from '../relay/relay-link.js';
import { dtmfMessage, errorMessage, interruptMessage, promptMessage, setupMessage, type AppMessage } from '../relay/relay-messages.js';
import type { CallSession } from './call-session.js';
import type { CallApp } from './call-contract.js';
import { LANGUAGE_TAGS, normaliseCallLanguage } from '../call-settings.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../../duplex/close-codes.js';

export interface RelayBridgeOptions {
  checkUrl(url: URL): Promise<PinnedAddress | void>;
  connectTimeoutMs?: number;
  logger: Logger;
  /** Plays `play` sources and `sendDigits` tones on the call; absent: those messages are answered with an error. */
  media?: {
    play(call: CallSession, source: string, loop: number, interruptible: boolean | undefined): Promise<void>;
    digits(call: CallSession, digits: string): Promise<void>;
  };
}

/** Dials the app and sends `setup`; resolves with the app side of the call (rejects when the app cannot be reached). */
export async function connectRelay(call: CallSession, url: string, options: RelayBridgeOptions, signal: AbortSignal): Promise<CallApp> {
  const requestId = call.identity.callId;
  let work: Promise<void> = Promise.resolve();
  const link = await RelayLink.connect(url, {
    checkUrl: options.checkUrl,
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
    signal,
    // One message after the other: a `text` after a `play` is spoken after the file (whose fetch takes time).
    onMessage: (message) => {
      work = work
        .then(() => handle(message))
        .catch((err: Error) => {
          options.logger.warn({ requestId, err: err.message, type: message.type }, 'relay message failed');
          link.send(errorMessage(`The ${message.type} message could not be carried out: ${err.message}`));
        });
    },
    onInvalid: (error) => options.logger.info({ requestId, reason: error.message }, 'relay app sent an invalid message'),
    onClose: (code, reason) => {
      if (!call.closed) void call.close('app_disconnected'); // clean (1000) or not: one reason; the log line keeps the code
      options.logger.info({ requestId, code, reason }, 'relay link closed');
    },
  });

  async function handle(message: AppMessage): Promise<void> {
    switch (message.type) {
      case 'text': {
        const interruptible = message.interruptible === undefined ? undefined : message.interruptible !== 'none';
        return call.say(message.token, message.last, {
          ...(interruptible === undefined ? {} : { interruptible }),
          ...(message.preemptible ? { preemptible: true } : {}),
        });
      }
      case 'language':
        return call.setLanguages({
          tts: message.ttsLanguage ? normaliseCallLanguage(message.ttsLanguage) : undefined,
          transcription: message.transcriptionLanguage ? normaliseCallLanguage(message.transcriptionLanguage) : undefined,
        });
      case 'end':
        options.logger.info({ requestId, handoffData: message.handoffData?.slice(0, 2000) }, 'relay app ended the call');
        return call.close('app_ended');
      case 'sendDigits':
        if (!options.media) throw new Error('sendDigits is not available on this server');
        return options.media.digits(call, message.digits);
      case 'play':
        if (!options.media) throw new Error('play is not available on this server');
        return options.media.play(call, message.source, message.loop ?? 1, message.interruptible === undefined ? undefined : message.interruptible !== 'none');
    }
  }

  const { start } = call;
  link.send(
    setupMessage({
      sessionId: call.identity.callId,
      callSid: start.callId,
      from: start.from ?? '',
      to: start.to ?? '',
      direction: start.direction ?? 'inbound',
      // The call token is Kuma's, not the app's.
      customParameters: Object.fromEntries(Object.entries(start.customParameters).filter(([name]) => name !== 'token')),
    }),
  );

  return {
    interim() {
      // ConversationRelay sends final prompts only (partial prompts are off by default).
    },
    final(turn) {
      const lang = LANGUAGE_TAGS[turn.lang];
      const original = turn.lang === 'bam' ? undefined : { lang: LANGUAGE_TAGS.bam, voicePrompt: turn.original };
      link.send(promptMessage({ voicePrompt: turn.text, lang, last: true, ...(original ? { original } : {}) }));
    },
    dtmf(digit) {
      link.send(dtmfMessage(digit));
    },
    interrupted(heard) {
      link.send(interruptMessage(heard.utteranceUntilInterrupt, heard.durationUntilInterruptMs));
    },
    ended(reason) {
      // The app learns a revocation from the close reason (other ends it knows of, or caused).
      link.close(CLOSE_CODES.normal, reason === CLOSE_REASONS.keyRevoked ? CLOSE_REASONS.callEndedKeyRevoked : CLOSE_REASONS.callEnded);
    },
  };
}
