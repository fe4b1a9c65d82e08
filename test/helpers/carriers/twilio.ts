/**
 * A simulated Twilio Media Stream (bidirectional `<Connect><Stream>`), following Twilio's documented message
 * order and types: `connected`, `start` (with `customParameters`), `media` of 160 μ-law bytes (20 ms) with
 * string `sequenceNumber`/`chunk`/`timestamp`, `dtmf`, `mark` echoes, `stop`. Reads Kuma's `media`, `mark`
 * and `clear` strictly, each with the `streamSid` it was given.
 */
import { randomBytes } from 'node:crypto';
import type WebSocket from 'ws';
import { expectEqual, expectKeys, expectString, readJson, strictBase64 } from './json-frames.js';
import { SimulatedCall, wsLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface TwilioCallOptions extends SimulatedCallOptions {
  customParameters?: Record<string, string>;
  callSid?: string;
  /** Twilio's `track="both_tracks"` also streams the outbound track; by default only inbound. */
  tracks?: string[];
}

const sid = (prefix: string): string => prefix + randomBytes(16).toString('hex');

export function twilioDialect(options: TwilioCallOptions = {}): CarrierDialect {
  const streamSid = sid('MZ');
  const callSid = options.callSid ?? sid('CA');
  const accountSid = sid('AC');
  let sequence = 0;
  let chunk = 0;
  const seq = (): string => String(++sequence);
  const json = (value: unknown): WireFrame => ({ text: JSON.stringify(value) });
  return {
    carrier: 'twilio',
    format: { codec: 'pcmu', sampleRate: 8000 },
    mediaFrameBytes: 160,
    echoMarksOnClear: true,
    opening: () => [
      json({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
      json({
        event: 'start',
        sequenceNumber: seq(),
        start: {
          accountSid,
          streamSid,
          callSid,
          tracks: options.tracks ?? ['inbound'],
          customParameters: options.customParameters ?? {},
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
        streamSid,
      }),
    ],
    media: (bytes, streamMs) =>
      json({
        event: 'media',
        sequenceNumber: seq(),
        media: { track: 'inbound', chunk: String(++chunk), timestamp: String(Math.round(streamMs)), payload: Buffer.from(bytes).toString('base64') },
        streamSid,
      }),
    dtmf: (digit) => json({ event: 'dtmf', streamSid, sequenceNumber: seq(), dtmf: { track: 'inbound_track', digit } }),
    closing: () => [json({ event: 'stop', sequenceNumber: seq(), streamSid, stop: { accountSid, callSid } })],
    read(frame): ServerFrame[] {
      const msg = readJson(frame, 'twilio');
      expectEqual(msg.streamSid, streamSid, 'twilio: streamSid');
      switch (msg.event) {
        case 'media':
          expectKeys(msg, ['event', 'streamSid', 'media'], 'twilio: outbound media');
          expectKeys(msg.media, ['payload'], 'twilio: outbound media.media');
          return [{ kind: 'audio', bytes: strictBase64(msg.media.payload, 'twilio: media.payload') }];
        case 'mark': {
          expectKeys(msg, ['event', 'streamSid', 'mark'], 'twilio: outbound mark');
          const name = expectString(msg.mark?.name, 'twilio: mark.name');
          return [{ kind: 'mark', name, echo: json({ event: 'mark', sequenceNumber: seq(), streamSid, mark: { name } }) }];
        }
        case 'clear':
          expectKeys(msg, ['event', 'streamSid'], 'twilio: clear');
          return [{ kind: 'clear', ack: null }];
        default:
          throw new Error(`twilio: unknown outbound event ${JSON.stringify(msg.event)}`);
      }
    },
  };
}

/** A Twilio call over an open `ws` WebSocket to Kuma's `/telephony/v1/twilio`. Call `open()` to start it. */
export function simulateTwilio(ws: WebSocket, options: TwilioCallOptions = {}): SimulatedCall {
  return new SimulatedCall(twilioDialect(options), (onFrame) => wsLink(ws, onFrame), options);
}
