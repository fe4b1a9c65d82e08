/**
 * The carriers Kuma speaks, by the name used in its paths (`/telephony/v1/<name>`) and call records. Adding a
 * carrier is one adapter file and one line here. `transport` says how the carrier reaches Kuma: a WebSocket
 * on Kuma's port, or (AudioSocket) its own TCP listener.
 */
import { createAudioSocketAdapter } from './audiosocket.js';
import type { CarrierAdapter } from './contract.js';
import { createExotelAdapter } from './exotel.js';
import { createPlivoAdapter } from './plivo.js';
import { createTelnyxAdapter } from './telnyx.js';
import { createTwilioAdapter } from './twilio.js';
import { createVonageAdapter } from './vonage.js';

export interface CarrierEntry {
  transport: 'websocket' | 'tcp';
  /** A fresh adapter for one call (adapters hold per-call state: the stream id, a partial frame). */
  create(): CarrierAdapter;
}

export const carriers = {
  twilio: { transport: 'websocket', create: createTwilioAdapter },
  telnyx: { transport: 'websocket', create: createTelnyxAdapter },
  plivo: { transport: 'websocket', create: createPlivoAdapter },
  exotel: { transport: 'websocket', create: createExotelAdapter },
  vonage: { transport: 'websocket', create: createVonageAdapter },
  audiosocket: { transport: 'tcp', create: createAudioSocketAdapter },
} as const satisfies Record<string, CarrierEntry>;

export type CarrierName = keyof typeof carriers;

export const carrierNames = Object.keys(carriers) as CarrierName[];

/** The carriers that connect over WebSocket, i.e. those with a `/telephony/v1/<name>` path. */
export const websocketCarrierNames = carrierNames.filter((name) => carriers[name].transport === 'websocket');

export function isCarrierName(name: string): name is CarrierName {
  return Object.hasOwn(carriers, name);
}

export function createCarrierAdapter(name: CarrierName): CarrierAdapter {
  return carriers[name].create();
}

export { CarrierFrameError } from './contract.js';
export type { CallAudioFormat, CallCodec, CallStart, CarrierAdapter, CarrierFrame, CarrierInbound } from './contract.js';
