/**
 * Simulated carriers by the name of their Kuma path, so that one test can run against every WebSocket carrier:
 * `simulators[name](ws, options)` → a SimulatedCall. AudioSocket (TCP) is `connectAudioSocket`.
 */
import type WebSocket from 'ws';
import { simulateExotel } from './exotel.js';
import { simulatePlivo } from './plivo.js';
import type { SimulatedCall, SimulatedCallOptions } from './simulated-call.js';
import { simulateTelnyx } from './telnyx.js';
import { simulateTwilio } from './twilio.js';
import { simulateVonage } from './vonage.js';

/** Where each carrier carries the integrator's call token in its own protocol. */
export interface TokenOptions extends SimulatedCallOptions {
  token?: string;
}

export const simulators: Record<'twilio' | 'telnyx' | 'plivo' | 'exotel' | 'vonage', (ws: WebSocket, options?: TokenOptions) => SimulatedCall> = {
  twilio: (ws, o = {}) => simulateTwilio(ws, { ...o, ...(o.token !== undefined && { customParameters: { token: o.token } }) }),
  telnyx: (ws, o = {}) => simulateTelnyx(ws, { ...o, ...(o.token !== undefined && { customParameters: { token: o.token } }) }),
  plivo: (ws, o = {}) => simulatePlivo(ws, { ...o, ...(o.token !== undefined && { extraHeaders: { token: o.token } }) }),
  exotel: (ws, o = {}) => simulateExotel(ws, { ...o, ...(o.token !== undefined && { customParameters: { token: o.token } }) }),
  vonage: (ws, o = {}) => simulateVonage(ws, { ...o, ...(o.token !== undefined && { headers: { token: o.token } }) }),
};

export { connectAudioSocket } from './audiosocket.js';
export { SimulatedCall, type CallLog, type CarrierDialect, type ServerFrame, type WireFrame } from './simulated-call.js';
export { decodePhone, encodePhone, toInt16, type PhoneFormat } from './phone-audio.js';
