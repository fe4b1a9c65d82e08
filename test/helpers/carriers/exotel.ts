/**
 * A simulated Exotel Voicebot (bidirectional AgentStream) stream, as Exotel documents it: `connected`,
 * `start` (`stream_sid`, `start.call_sid`, `custom_parameters`, `media_format` with string `sample_rate`),
 * `media` of raw 16-bit PCM every 100 ms (string `sequence_number`/`chunk`/`timestamp`), `dtmf`, `mark`
 * echoes, `stop`. Reads Kuma's `media` (chunks in multiples of 320 bytes, as Exotel requires), `mark`, `clear`.
 */
import { randomBytes } from 'node:crypto';
import type WebSocket from 'ws';
import { expectEqual, expectKeys, expectString, readJson, strictBase64 } from './json-frames.js';
import { SimulatedCall, wsLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface ExotelCallOptions extends SimulatedCallOptions {
  sampleRate?: 8000 | 16000;
  customParameters?: Record<string, string>;
}

/** Exotel plays outbound PCM in multiples of 320 bytes; anything else risks gaps. */
const EXOTEL_CHUNK_MULTIPLE = 320;

export function exotelDialect(options: ExotelCallOptions = {}): CarrierDialect {
  const sampleRate = options.sampleRate ?? 8000;
  const streamSid = randomBytes(16).toString('hex');
  const callSid = randomBytes(16).toString('hex');
  const accountSid = 'kumatest1';
  let sequence = 0;
  let chunk = 0;
  const seq = (): string => String(++sequence);
  const json = (value: unknown): WireFrame => ({ text: JSON.stringify(value) });
  return {
    carrier: 'exotel',
    format: { codec: 'l16', sampleRate },
    mediaFrameBytes: (sampleRate * 2) / 10,
    echoMarksOnClear: true,
    opening: () => [
      json({ event: 'connected' }),
      json({
        event: 'start',
        sequence_number: seq(),
        stream_sid: streamSid,
        start: {
          stream_sid: streamSid,
          call_sid: callSid,
          account_sid: accountSid,
          from: '+919876543210',
          to: '+918047491899',
          custom_parameters: options.customParameters ?? {},
          media_format: { encoding: 'audio/x-raw', sample_rate: String(sampleRate), bit_rate: '16' },
        },
      }),
    ],
    media: (bytes, streamMs) =>
      json({
        event: 'media',
        sequence_number: seq(),
        stream_sid: streamSid,
        media: { chunk: String(++chunk), timestamp: String(Math.round(streamMs)), payload: Buffer.from(bytes).toString('base64') },
      }),
    dtmf: (digit) => json({ event: 'dtmf', sequence_number: seq(), stream_sid: streamSid, dtmf: { digit, duration: '100' } }),
    closing: () => [
      json({ event: 'stop', sequence_number: seq(), stream_sid: streamSid, stop: { call_sid: callSid, account_sid: accountSid, reason: 'callended' } }),
    ],
    read(frame): ServerFrame[] {
      const msg = readJson(frame, 'exotel');
      expectEqual(msg.stream_sid, streamSid, 'exotel: stream_sid');
      switch (msg.event) {
        case 'media': {
          expectKeys(msg, ['event', 'stream_sid', 'media'], 'exotel: outbound media');
          expectKeys(msg.media, ['payload'], 'exotel: outbound media.media');
          const bytes = strictBase64(msg.media.payload, 'exotel: media.payload');
          if (bytes.length % EXOTEL_CHUNK_MULTIPLE !== 0) throw new Error(`exotel: outbound chunk of ${bytes.length} bytes is not a multiple of 320`);
          return [{ kind: 'audio', bytes }];
        }
        case 'mark': {
          expectKeys(msg, ['event', 'stream_sid', 'mark'], 'exotel: outbound mark');
          const name = expectString(msg.mark?.name, 'exotel: mark.name');
          return [{ kind: 'mark', name, echo: json({ event: 'mark', sequence_number: seq(), stream_sid: streamSid, mark: { name } }) }];
        }
        case 'clear':
          expectKeys(msg, ['event', 'stream_sid'], 'exotel: clear');
          return [{ kind: 'clear', ack: null }];
        default:
          throw new Error(`exotel: unknown outbound event ${JSON.stringify(msg.event)}`);
      }
    },
  };
}

export function simulateExotel(ws: WebSocket, options: ExotelCallOptions = {}): SimulatedCall {
  return new SimulatedCall(exotelDialect(options), (onFrame) => wsLink(ws, onFrame), options);
}
