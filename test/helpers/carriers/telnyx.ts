/**
 * A simulated Telnyx media stream (RTP bidirectional mode), in Telnyx's documented order and names:
 * `connected`, `start` (`stream_id`, `start.call_control_id`, `media_format` with a numeric `sample_rate`),
 * `media` (string `sequence_number`/`chunk`/`timestamp`, 20 ms of PCMU or PCMA), `dtmf`, `mark` echoes,
 * `stop`. Reads Kuma's `media`, `mark`, `clear` strictly.
 */
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { expectKeys, expectString, readJson, strictBase64 } from './json-frames.js';
import { SimulatedCall, wsLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface TelnyxCallOptions extends SimulatedCallOptions {
  codec?: 'PCMU' | 'PCMA';
  customParameters?: Record<string, string>;
  /** Telnyx's `stream_auth_token`, sent in `connected` as `x-telnyx-streaming-auth-token`. */
  streamAuthToken?: string;
  from?: string;
  to?: string;
}

export function telnyxDialect(options: TelnyxCallOptions = {}): CarrierDialect {
  const codec = options.codec ?? 'PCMU';
  const streamId = randomUUID();
  const callControlId = `v3:${randomUUID()}`;
  let sequence = 0;
  let chunk = 0;
  const seq = (): string => String(++sequence);
  const json = (value: unknown): WireFrame => ({ text: JSON.stringify(value) });
  return {
    carrier: 'telnyx',
    format: { codec: codec === 'PCMA' ? 'pcma' : 'pcmu', sampleRate: 8000 },
    mediaFrameBytes: 160,
    echoMarksOnClear: true,
    opening: () => [
      json({
        event: 'connected',
        version: '1.0.0',
        ...(options.streamAuthToken !== undefined && { 'x-telnyx-streaming-auth-token': options.streamAuthToken }),
      }),
      json({
        event: 'start',
        sequence_number: seq(),
        start: {
          user_id: randomUUID(),
          call_control_id: callControlId,
          client_state: Buffer.from('kuma-test').toString('base64'),
          from: options.from ?? '+22370000001',
          to: options.to ?? '+22370000002',
          ...(options.customParameters && { custom_parameters: options.customParameters }),
          media_format: { encoding: codec, sample_rate: 8000, channels: 1 },
        },
        stream_id: streamId,
      }),
    ],
    media: (bytes, streamMs) =>
      json({
        event: 'media',
        sequence_number: seq(),
        media: { track: 'inbound', chunk: String(++chunk), timestamp: String(Math.round(streamMs)), payload: Buffer.from(bytes).toString('base64') },
        stream_id: streamId,
      }),
    dtmf: (digit) => json({ event: 'dtmf', stream_id: streamId, occurred_at: new Date().toISOString(), sequence_number: seq(), dtmf: { digit } }),
    closing: () => [json({ event: 'stop', sequence_number: seq(), stop: { user_id: randomUUID(), call_control_id: callControlId }, stream_id: streamId })],
    read(frame): ServerFrame[] {
      const msg = readJson(frame, 'telnyx');
      switch (msg.event) {
        case 'media':
          expectKeys(msg, ['event', 'media'], 'telnyx: outbound media');
          expectKeys(msg.media, ['payload'], 'telnyx: outbound media.media');
          return [{ kind: 'audio', bytes: strictBase64(msg.media.payload, 'telnyx: media.payload') }];
        case 'mark': {
          expectKeys(msg, ['event', 'mark'], 'telnyx: outbound mark');
          const name = expectString(msg.mark?.name, 'telnyx: mark.name');
          return [{ kind: 'mark', name, echo: json({ event: 'mark', sequence_number: seq(), stream_id: streamId, mark: { name } }) }];
        }
        case 'clear':
          expectKeys(msg, ['event'], 'telnyx: clear');
          return [{ kind: 'clear', ack: null }];
        default:
          throw new Error(`telnyx: unknown outbound event ${JSON.stringify(msg.event)}`);
      }
    },
  };
}

export function simulateTelnyx(ws: WebSocket, options: TelnyxCallOptions = {}): SimulatedCall {
  return new SimulatedCall(telnyxDialect(options), (onFrame) => wsLink(ws, onFrame), options);
}
