/**
 * One realtime WebSocket: client text frames → parsed events → the session core; session outputs →
 * server events (session.created first). Pure frame translation: no engine, no audio handling here.
 * Refused client events get an `error` event (type invalid_request_error, with the offending event_id)
 * and the session goes on; only a fatal condition (balance exhausted, VAD lost) sends `error` and closes.
 */
import { randomBytes } from 'node:crypto';
import { RealtimeSession } from '../../realtime/realtime-session.js';
import type { SessionConfig, SpeechModel } from '../../realtime/session-config.js';
import type { FatalCode, SessionOutput } from '../../realtime/session-events.js';
import { realtimeMetrics } from '../../observability/realtime-metrics.js';
import { ApiError } from '../errors.js';
import type { Caller } from '../../auth/caller.js';
import type { DuplexHandler, DuplexPeer } from '../../duplex/duplex-contract.js';
import { AudioScratch, parseClientEvent, RealtimeEventError, type ClientEvent, type Shape } from './client-events.js';
import { ConversationItems } from './conversation-items.js';
import { Outbound } from './outbound.js';
import type { RealtimeDeps } from './realtime-route.js';
import { formatOutput, sessionObject, type OutputState, type ServerEvent } from './server-events.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../../duplex/close-codes.js';

/** Server events that may wait for a slow reader before it is cut off (the transport holds more). */
const MAX_QUEUED_EVENT_BYTES = 1024 * 1024;

export interface ConnectionOptions {
  shape: Shape;
  config: SessionConfig;
  translator: SpeechModel | null;
  caller: Caller;
  requestId: string;
  resolveModel(name: string): ResolvedModel;
}

/** A transcription model name as the session takes it: the speech model, and the translation model if that was named. */
export interface ResolvedModel {
  model: SpeechModel;
  translationModel: string | null;
}

/** The function that opens the session on its socket once the upgrade completed (nothing is held before). */
export function openConnection(deps: RealtimeDeps, options: ConnectionOptions): (peer: DuplexPeer) => DuplexHandler {
  return (peer) => startSession(deps, options, peer);
}

function startSession(deps: RealtimeDeps, options: ConnectionOptions, peer: DuplexPeer): DuplexHandler {
  const metrics = realtimeMetrics(deps.metrics);
  const sessionId = `sess_${randomBytes(12).toString('hex')}`;
  const translation = options.shape === 'translation';
  const out = new Outbound(peer, MAX_QUEUED_EVENT_BYTES);
  const state: OutputState = { sourceSent: false, targetSent: false, translating: false };
  /** The shapes of the updates in flight, in order: each is answered in its own shape. */
  const updateShapes: Shape[] = [];
  let fatal: FatalCode | null = null;
  /** GA conversation items (transcription sessions; the translation resource has no conversation). */
  const items = translation ? null : new ConversationItems();

  const onOutput = (output: SessionOutput): void => {
    switch (output.type) {
      case 'updated': {
        const shape = updateShapes.shift() ?? options.shape;
        state.translating = !translation && session.configuration.target !== null;
        return out.send({
          type: shape === 'beta' ? 'transcription_session.updated' : 'session.updated',
          session: sessionObject(shape, sessionId, session.configuration),
        });
      }
      case 'rejected':
        if (output.input === 'update') updateShapes.shift();
        return out.send(errorEvent('invalid_request_error', output.error.code, output.error.message, output.error.param, output.ref));
      case 'fatal':
        fatal = output.code;
        return out.send(errorEvent(FATAL_ERROR_TYPE[output.code], output.code, output.message, null));
      case 'closed':
        if (translation) out.send({ type: 'session.closed' });
        // 1008 for a session ended by policy (quota, a revoked key), 1011 for a server failure, 1000 for a graceful close.
        return peer.close(
          fatal === 'server_error' ? CLOSE_CODES.internalError : fatal ? CLOSE_CODES.policyViolation : CLOSE_CODES.normal,
          fatal ?? CLOSE_REASONS.sessionClosed,
        );
      default:
        for (const event of formatOutput(options.shape, output, state)) out.send(event);
        if (items) for (const event of items.eventsFor(output, output.type === 'completed' ? output.translation?.text : undefined)) out.send(event);
    }
  };

  const session = new RealtimeSession(
    {
      ledger: deps.ledger,
      // Nothing is charged once the key is revoked, whoever revoked it (the session then ends `key_revoked`).
      charge: { requestId: options.requestId, accountId: options.caller.account.id, keyId: options.caller.key.id, requireActiveKey: true },
      vad: deps.vad,
      translator: options.translator,
      maxBufferSeconds: deps.maxBufferSeconds,
      ...(deps.inputRate ? { inputRate: deps.inputRate } : {}),
      ...(deps.finalTimeoutMs ? { finalTimeoutMs: deps.finalTimeoutMs } : {}),
      delivered: () => out.flushed(),
      logger: deps.logger,
      ...(deps.interimAllowed ? { interimAllowed: deps.interimAllowed } : {}),
      observer: {
        turnDetected: () => metrics.turns.inc(),
        turnCompleted: (seconds) => metrics.speechStoppedToCompleted.observe(seconds),
        chunk: (kind) => metrics.chunks.inc({ kind }),
        itemFailed: (code) => metrics.itemsFailed.inc({ code }),
      },
    },
    options.config,
    onOutput,
  );
  state.translating = !translation && options.config.target !== null;
  const kind = translation ? 'translation' : 'transcription';
  metrics.sessions.inc({ kind });
  out.send({ type: 'session.created', session: sessionObject(options.shape, sessionId, session.configuration) });
  session.start();
  const refuse = (err: unknown) => out.send(refusal(err));
  const retrieve = (itemId: string, ref: string | undefined) => {
    const answer = items!.retrieve(itemId);
    out.send(answer.found ? answer.event : errorEvent('invalid_request_error', answer.code, answer.message, answer.param, ref));
  };
  const scratch = new AudioScratch();
  return {
    onText(text) {
      // A JS string has at most 3 UTF-8 bytes per UTF-16 unit: measure only when it could be over.
      if (text.length * 3 > deps.maxMessageBytes && Buffer.byteLength(text) > deps.maxMessageBytes) {
        return refuse(new RealtimeEventError('request_too_large', `The event is larger than ${deps.maxMessageBytes} bytes; send audio in smaller appends.`));
      }
      let event: ClientEvent;
      try {
        event = parseClientEvent(text, translation, scratch);
      } catch (err) {
        return refuse(err);
      }
      if (event.kind === 'retrieve') return retrieve(event.itemId, event.ref);
      if (event.kind !== 'update') return session.input(event);
      const { model, ...rest } = event.update;
      let resolved: ResolvedModel | undefined;
      try {
        resolved = model ? options.resolveModel(model) : undefined;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return out.send(errorEvent(err.type, err.code, err.message, err.param, event.ref));
      }
      updateShapes.push(event.shape);
      session.input({ kind: 'update', update: { ...rest, ...resolved }, ref: event.ref });
    },
    onBinary() {
      refuse(new RealtimeEventError('invalid_value', 'Binary frames are not taken: send audio as base64 in input_audio_buffer.append events.'));
    },
    onClose() {
      metrics.sessions.dec({ kind });
      session.close('client_gone');
    },
    onShutdown() {
      // Finish what was said: the turn in progress is committed and its transcript delivered, if the grace period allows.
      session.input({ kind: 'close' });
    },
    onKeyRevoked() {
      // An `error` event (invalid_request_error, key_revoked), then close 1008 key_revoked; the item in progress is dropped uncharged.
      session.revoke();
    },
  };
}

/** The `error.type` of the event a fatal end sends, as OpenAI types them. */
const FATAL_ERROR_TYPE: Record<FatalCode, string> = {
  insufficient_quota: 'insufficient_quota',
  key_revoked: 'invalid_request_error',
  server_error: 'server_error',
};

function errorEvent(type: string, code: string, message: string, param: string | null, ref?: string): ServerEvent {
  return { type: 'error', error: { type, code, message, param, event_id: ref ?? null } };
}

/** The error event for a refused client event. Anything unexpected is rethrown (the transport closes 1011, logged). */
function refusal(err: unknown): ServerEvent {
  if (err instanceof RealtimeEventError) return errorEvent('invalid_request_error', err.code, err.message, err.param, err.ref);
  throw err;
}
