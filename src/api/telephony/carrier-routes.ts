/**
 * The carriers' media-stream WebSockets, one path per carrier under /telephony/v1 (`/twilio`, `/telnyx`,
 * `/plivo`, `/exotel`, `/vonage`), and the per-call control socket `/calls/:call_id/events`.
 *
 * Carriers cannot send an API key: a stream is authorised by a call token (POST /telephony/v1/tokens), given
 * as `?token=` — checked here, before the upgrade (401 when refused) — or as the `token` custom parameter of
 * the `start` message, checked by the connection before any audio is processed. With
 * KUMA_TWILIO_AUTH_TOKEN set, the Twilio path also requires a valid X-Twilio-Signature.
 *
 * A stream without `?token=` opens pre-auth (DuplexResult.preAuth): it counts against the server's caps
 * on unauthenticated sockets until its start message's token checks out. The streams' uWS behaviour
 * buffers at most twice the largest carrier frame: a bigger message drops the socket before it is read.
 */
import { randomBytes } from 'node:crypto';
import { createCarrierAdapter, websocketCarrierNames, type CarrierName } from '../../telephony/carriers/index.js';
import { callConnection, CallRefused, CARRIER_MAX_FRAME_BYTES, type CallGrant } from '../../telephony/call/call-connection.js';
import type { TelephonyService } from '../../telephony/telephony-service.js';
import { verifyTwilioSignature } from '../../telephony/twilio-signature.js';
import { ApiError } from '../errors.js';
import type { ApiRequest, ApiResult, RouteDef, WebSocketRouteLimits } from '../types.js';
import type { DuplexPeer } from '../../duplex/duplex-contract.js';

export interface CarrierRouteDeps {
  telephony: TelephonyService;
  /** The operator's Twilio auth token: when set, Twilio streams must carry a valid X-Twilio-Signature. */
  twilioAuthToken: string;
  /** The public base URL Twilio signs (e.g. wss://kuma.example.com); the request's Host is used when empty. */
  publicUrl: string;
}

/** Frames between the carrier limit and this are refused by the connection (1009 frame_too_big); bigger ones never get read. */
const CARRIER_SOCKET: WebSocketRouteLimits = { maxPayloadBytes: 2 * CARRIER_MAX_FRAME_BYTES };

export function carrierRoutes(deps: CarrierRouteDeps): RouteDef[] {
  const routes: RouteDef[] = websocketCarrierNames.map((carrier) => ({
    method: 'GET' as const,
    path: `/${carrier}`,
    surface: 'telephony' as const,
    auth: false,
    websocket: CARRIER_SOCKET,
    openapi: {
      operationId: `openCallStream_${carrier}`,
      summary: `${carrier} media stream (WebSocket): a phone call, authorised by a call token`,
      description:
        'Upgrade to a WebSocket. Give the call token as `?token=` or as the `token` custom parameter of the start message. A plain HTTP request is answered 426. Streams without `?token=` are capped while they wait for their start message (README "Limits"): 429 when the caller\'s address has too many, 503 when the server has.',
      tags: ['Telephony'],
      responses: { 101: { description: 'Switching protocols: the carrier streams the call' } },
      errors: [401, 426],
    },
    handler: (req: ApiRequest) => openStream(deps, carrier, req),
  }));
  return routes;
}

async function openStream(deps: CarrierRouteDeps, carrier: CarrierName, req: ApiRequest): Promise<ApiResult> {
  if (carrier === 'twilio' && deps.twilioAuthToken) checkTwilioSignature(deps, req);
  const token = req.query.get('token');
  let preGrant: CallGrant | null = null;
  if (token) {
    try {
      preGrant = await deps.telephony.authorize(token, null);
    } catch (err) {
      if (err instanceof CallRefused) throw new ApiError('invalid_api_key', err.message);
      throw err;
    }
  }
  const callId = `call_${randomBytes(12).toString('hex')}`;
  const adapter = createCarrierAdapter(carrier);
  return { kind: 'duplex', preAuth: preGrant === null, open: (peer: DuplexPeer) => callConnection(deps.telephony, adapter, callId, preGrant, peer) };
}

function checkTwilioSignature(deps: CarrierRouteDeps, req: ApiRequest): void {
  const signature = req.headers['x-twilio-signature'];
  const base = deps.publicUrl || `wss://${req.headers.host ?? ''}`;
  const query = req.queryString;
  const url = `${base.replace(/\/$/, '')}${req.path}${query ? `?${query}` : ''}`;
  if (!signature || !verifyTwilioSignature(deps.twilioAuthToken, signature, url)) {
    throw new ApiError('invalid_api_key', 'The X-Twilio-Signature header is missing or does not match this stream URL.');
  }
}
