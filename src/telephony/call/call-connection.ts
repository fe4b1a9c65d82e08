/**
 * One carrier media stream, from its first frame to its close: frames are parsed by the carrier's adapter;
 * nothing is processed until the call is authenticated (the token from the stream URL, checked before the
 * upgrade, or from the `start` frame's custom parameters); then a CallSession is opened with its app side
 * (a ConversationRelay link or the transcription sink), and carrier events drive it.
 *
 * Closes (code, reason): 1008 `invalid_call_token` (no or bad token), 1008 `start_timeout` (no `start`
 * within the opener's startTimeoutMs), 1008 `malformed_frame` (not this carrier's protocol; the reason names
 * what), 1009 `frame_too_big` (over 64 KiB), 1008 `call_limit` (the account's concurrent calls), 1008
 * `insufficient_quota`, 1008 `key_revoked` (the key that minted the call token, or the AudioSocket key, was
 * revoked), 1011 `app_unreachable` (the relay app could not be reached), 1000 when the call ends normally.
 */
import type { DuplexHandler, DuplexPeer } from '../../duplex/duplex-contract.js';
import { isCapacityError } from '../../engines/errors.js';
import type { Logger } from '../../observability/logger.js';
import { SessionLifecycle } from '../../primitives/session-lifecycle.js';
import { CarrierFrameError, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from '../carriers/contract.js';
import type { CallSession } from './call-session.js';
import type { CallApp, CallCarrier, CallEndReason, CallIdentity } from './call-contract.js';
import type { CallSettings } from '../call-settings.js';
import { CLOSE_CODES, CLOSE_REASONS, type CloseCode } from '../../duplex/close-codes.js';

/** Largest carrier frame taken (a start message with many custom parameters is a few kB). */
export const CARRIER_MAX_FRAME_BYTES = 64 * 1024;

/** Who the call is billed to and how it behaves, once its token checked out. */
export interface CallGrant {
  accountId: string;
  keyId: string;
  settings: CallSettings;
}

/** Why a stream is refused before (or as) its call is opened. */
export type CallRefusalReason = 'invalid_call_token' | 'call_limit' | 'insufficient_quota' | 'app_unreachable';

/** Why a carrier stream closes: its call ended, it was refused, it never sent `start`, or the carrier said `stop`. */
type StreamCloseReason = CallEndReason | CallRefusalReason | 'start_timeout' | 'stop';

/** A refusal the connection turns into a close code and reason. */
export class CallRefused extends Error {
  constructor(
    readonly code: CloseCode,
    readonly reason: CallRefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'CallRefused';
  }
}

export interface CallOpener {
  /** Checks a token (and the start's parameters) → the grant; throws CallRefused. */
  authorize(token: string | null, start: CallStart): Promise<CallGrant>;
  /** Creates the call session (throws CallRefused for a cap or an empty balance). */
  createCall(
    grant: CallGrant,
    identity: Omit<CallIdentity, 'accountId' | 'keyId'>,
    start: CallStart,
    carrier: CallCarrier,
    adapter: CarrierAdapter,
  ): Promise<CallSession>;
  /** Connects the app side (relay link, or the transcription sink); throws CallRefused when the app cannot be reached. */
  connectApp(call: CallSession, grant: CallGrant): Promise<CallApp>;
  /** The call's session place is given back (concurrent-call cap). */
  released(grant: CallGrant): void;
  /** A stream that has not sent `start` by then is closed. */
  startTimeoutMs: number;
  logger: Logger;
}

export function callConnection(opener: CallOpener, adapter: CarrierAdapter, callId: string, preGrant: CallGrant | null, peer: DuplexPeer): DuplexHandler {
  let call: CallSession | null = null;
  let grant: CallGrant | null = preGrant;
  let starting = false;
  /** The stream is done (Kuma closed it, the carrier sent `stop`, or the socket is gone): frames are ignored, nothing is sent. */
  const stream = new SessionLifecycle<StreamCloseReason>();
  const startTimer = setTimeout(
    () => close(CLOSE_CODES.policyViolation, CLOSE_REASONS.startTimeout, `No start message within ${opener.startTimeoutMs / 1000} s.`),
    opener.startTimeoutMs,
  );
  startTimer.unref();

  const send = (frame: CarrierFrame | null): boolean => {
    if (!frame || stream.closed) return false;
    return ('text' in frame ? peer.sendText(frame.text) : peer.sendBinary(frame.binary)) !== 'closed';
  };
  const carrier: CallCarrier = {
    media: (bytes) => send(adapter.media(bytes)),
    mark: (name) => send(adapter.mark(name)),
    clear: () => void send(adapter.clear()),
    hangup: (reason) => {
      for (const frame of adapter.hangup()) send(frame);
      // Ended by policy (the balance, the key's revocation): 1008; otherwise a normal end.
      close(
        reason === CLOSE_REASONS.insufficientQuota || reason === CLOSE_REASONS.keyRevoked ? CLOSE_CODES.policyViolation : CLOSE_CODES.normal,
        reason,
        `The call ended: ${reason}.`,
      );
    },
  };

  function close(code: CloseCode, reason: Exclude<StreamCloseReason, 'stop'>, message: string): void {
    if (!stream.close(reason)) return;
    clearTimeout(startTimer);
    opener.logger.info({ requestId: callId, carrier: adapter.carrier, code, reason, message }, 'call stream closed');
    peer.close(code, reason);
    // Only a call's own end reasons reach it: a refused token or cap and a start timeout come before there is a call.
    void call?.close(reason === 'start_timeout' || reason === 'invalid_call_token' || reason === 'call_limit' ? 'error' : reason);
  }

  async function begin(start: CallStart): Promise<void> {
    starting = true;
    clearTimeout(startTimer);
    try {
      grant ??= await opener.authorize(start.customParameters.token ?? null, start);
      if (stream.closed) return;
      peer.authenticated(); // a pre-auth stream leaves the caps on unauthenticated sockets
      call = await opener.createCall(grant, { callId, carrier: adapter.carrier }, start, carrier, adapter);
      // The call's place under the account's cap comes back when the stream closes — at once if it already
      // closed while the call was being created (an 'abort' listener added now would never fire).
      const releaseGrant = grant;
      if (peer.signal.aborted) opener.released(releaseGrant);
      else peer.signal.addEventListener('abort', () => opener.released(releaseGrant), { once: true });
      if (stream.closed) return void call.close('caller_hangup');
      const app = await opener.connectApp(call, grant);
      if (stream.closed) return;
      call.open(app);
    } catch (err) {
      if (err instanceof CallRefused) return close(err.code, err.reason, err.message);
      // A model at capacity is load, not a fault: warn, never error (the carrier is closed 1011 either way).
      opener.logger[isCapacityError(err) ? 'warn' : 'error']({ requestId: callId, err: (err as Error).message }, 'call failed to start');
      close(CLOSE_CODES.internalError, CLOSE_REASONS.serverError, 'The call could not be started.');
    }
  }

  function handle(event: CarrierInbound): void {
    switch (event.type) {
      case 'start':
        if (starting) return close(CLOSE_CODES.policyViolation, CLOSE_REASONS.malformedFrame, 'A second start message on one stream.');
        void begin(event.start);
        return;
      case 'media':
        // Audio before the call is authenticated and open is not processed (and not kept).
        if (call && !call.closed) call.media(event.audio);
        return;
      case 'dtmf':
        call?.dtmf(event.digit);
        return;
      case 'mark':
        call?.mark(event.name);
        return;
      case 'stop':
        stream.close('stop');
        clearTimeout(startTimer);
        void call?.close('caller_hangup');
        peer.close(CLOSE_CODES.normal, CLOSE_REASONS.stop);
        return;
      default:
        return;
    }
  }

  const onFrame = (size: number, parse: () => CarrierInbound[]): void => {
    if (stream.closed) return;
    // A carrier's frames are small (20–100 ms of audio, or a start message): a huge one is not a carrier.
    if (size > CARRIER_MAX_FRAME_BYTES)
      return close(CLOSE_CODES.messageTooBig, CLOSE_REASONS.frameTooBig, `A ${size}-byte frame; carrier frames are at most ${CARRIER_MAX_FRAME_BYTES} bytes.`);
    let events: CarrierInbound[];
    try {
      events = parse();
    } catch (err) {
      if (err instanceof CarrierFrameError) return close(CLOSE_CODES.policyViolation, CLOSE_REASONS.malformedFrame, err.message);
      throw err;
    }
    for (const event of events) handle(event);
  };

  return {
    // A JS string has at most 3 UTF-8 bytes per UTF-16 unit: its length × 3 bounds its size.
    onText: (text) => onFrame(text.length * 3 > CARRIER_MAX_FRAME_BYTES ? Buffer.byteLength(text) : text.length, () => adapter.parseText(text)),
    onBinary: (bytes) => onFrame(bytes.length, () => adapter.parseBinary(bytes)),
    onClose() {
      clearTimeout(startTimer);
      stream.close('caller_hangup');
      void call?.close('caller_hangup');
    },
    onShutdown() {
      void call?.close(CLOSE_REASONS.shutdown);
    },
  };
}
