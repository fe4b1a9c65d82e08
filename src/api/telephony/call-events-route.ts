/**
 * GET /telephony/v1/calls/:call_id/events — the per-call control WebSocket: an application (with its API
 * key) follows one live call of its account, by Kuma's call id or the carrier's (Twilio CallSid…), and
 * receives the same event envelopes as the account's webhook (`transcript.interim`, `transcript.final`,
 * `dtmf`, `call.ended`) as they happen; the socket closes 1000 after `call.ended`. 404 before the upgrade when
 * no such call is live for the account.
 */
import type { TelephonyService } from '../../telephony/telephony-service.js';
import { ApiError } from '../errors.js';
import type { ApiResult, RouteDef } from '../types.js';
import type { DuplexPeer } from '../../duplex/duplex-contract.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../../duplex/close-codes.js';

/** Envelopes that may wait for a control socket that does not read before it is cut off. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export function callEventsRoute(telephony: TelephonyService): RouteDef {
  return {
    method: 'GET',
    path: '/calls/:call_id/events',
    surface: 'telephony',
    auth: true,
    openapi: {
      operationId: 'followCall',
      summary: "A live call's events (WebSocket): transcripts, DTMF, the end, as the webhook receives them",
      description:
        "Upgrade to a WebSocket; `call_id` is Kuma's call id or the carrier's (Twilio CallSid). A plain HTTP request to a live call is answered 426.",
      tags: ['Telephony'],
      responses: { 101: { description: 'Switching protocols: events follow' } },
      errors: [404],
    },
    handler: async (req, caller): Promise<ApiResult> => {
      const asked = req.params.call_id ?? '';
      const callId = telephony.hub.find(asked, caller!.account.id);
      if (!callId) throw new ApiError('call_not_found', `No call ${JSON.stringify(asked.slice(0, 80))} is in progress for this account.`, { param: 'call_id' });
      return {
        kind: 'duplex',
        open(peer: DuplexPeer) {
          const unsubscribe = telephony.hub.subscribe(
            callId,
            (envelope) => {
              if (peer.bufferedAmount() > MAX_BUFFERED_BYTES) return peer.close(CLOSE_CODES.policyViolation, CLOSE_REASONS.notReading);
              peer.sendText(JSON.stringify(envelope));
            },
            () => peer.close(CLOSE_CODES.normal, CLOSE_REASONS.callEnded),
          );
          return {
            onText() {},
            onBinary() {},
            onClose: () => unsubscribe(),
          };
        },
      };
    },
  };
}
