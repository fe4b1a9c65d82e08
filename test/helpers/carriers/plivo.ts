/**
 * A simulated Plivo audio stream (`<Stream bidirectional="true">`), as Plivo documents it: `start` with a
 * numeric `sequenceNumber`, `start.callId`/`streamId`/`mediaFormat` and the XML's `extraHeaders` as an
 * `extra_headers` string; `media` (20 ms, numeric `chunk`, string `timestamp`); `dtmf`; `playedStream` for
 * each `checkpoint` once played; `clearedAudio` for `clearAudio`. Plivo has no stop frame: it closes.
 */
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { expectEqual, expectKeys, expectString, readJson, strictBase64 } from './json-frames.js';
import type { PhoneFormat } from './phone-audio.js';
import { SimulatedCall, wsLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface PlivoCallOptions extends SimulatedCallOptions {
  /** The stream's contentType: `audio/x-mulaw;rate=8000` (default) or `audio/x-l16;rate=8000|16000`. */
  format?: PhoneFormat;
  /** Plivo allows only [A-Za-z0-9] in names and values. */
  extraHeaders?: Record<string, string>;
}

export function plivoDialect(options: PlivoCallOptions = {}): CarrierDialect {
  const format = options.format ?? { codec: 'pcmu', sampleRate: 8000 };
  const contentType = format.codec === 'l16' ? 'audio/x-l16' : 'audio/x-mulaw';
  const streamId = randomUUID();
  const callId = randomUUID();
  // Plivo's media timestamp is Unix time in ms: the stream's start plus the audio sent so far.
  const startedAt = Date.now();
  let sequence = 0;
  let chunk = 0;
  const json = (value: unknown): WireFrame => ({ text: JSON.stringify(value) });
  const headers = Object.entries(options.extraHeaders ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(';');
  return {
    carrier: 'plivo',
    format,
    mediaFrameBytes: (format.sampleRate * (format.codec === 'l16' ? 2 : 1)) / 50,
    echoMarksOnClear: false,
    opening: () => [
      json({
        event: 'start',
        sequenceNumber: ++sequence,
        start: {
          callId,
          streamId,
          accountId: 'MAXXXXXXXXXXXXXXXXXX',
          tracks: ['inbound'],
          mediaFormat: { encoding: contentType, sampleRate: format.sampleRate },
        },
        extra_headers: headers,
      }),
    ],
    media: (bytes, streamMs) =>
      json({
        event: 'media',
        sequenceNumber: ++sequence,
        streamId,
        media: { track: 'inbound', timestamp: String(startedAt + Math.round(streamMs)), chunk: ++chunk, payload: Buffer.from(bytes).toString('base64') },
        extra_headers: headers,
      }),
    dtmf: (digit) => json({ event: 'dtmf', sequenceNumber: ++sequence, streamId, dtmf: { track: 'inbound', digit } }),
    closing: () => [],
    read(frame): ServerFrame[] {
      const msg = readJson(frame, 'plivo');
      switch (msg.event) {
        case 'playAudio':
          expectKeys(msg, ['event', 'media'], 'plivo: playAudio');
          expectKeys(msg.media, ['contentType', 'sampleRate', 'payload'], 'plivo: playAudio.media');
          expectEqual(msg.media.contentType, contentType, 'plivo: playAudio.media.contentType');
          expectEqual(msg.media.sampleRate, format.sampleRate, 'plivo: playAudio.media.sampleRate');
          return [{ kind: 'audio', bytes: strictBase64(msg.media.payload, 'plivo: playAudio.media.payload') }];
        case 'checkpoint': {
          expectKeys(msg, ['event', 'streamId', 'name'], 'plivo: checkpoint');
          expectEqual(msg.streamId, streamId, 'plivo: checkpoint.streamId');
          const name = expectString(msg.name, 'plivo: checkpoint.name');
          return [{ kind: 'mark', name, echo: json({ event: 'playedStream', sequenceNumber: ++sequence, streamId, name }) }];
        }
        case 'clearAudio':
          expectKeys(msg, ['event', 'streamId'], 'plivo: clearAudio');
          expectEqual(msg.streamId, streamId, 'plivo: clearAudio.streamId');
          return [{ kind: 'clear', ack: json({ sequenceNumber: ++sequence, event: 'clearedAudio', streamId }) }];
        default:
          throw new Error(`plivo: unknown outbound event ${JSON.stringify(msg.event)}`);
      }
    },
  };
}

export function simulatePlivo(ws: WebSocket, options: PlivoCallOptions = {}): SimulatedCall {
  return new SimulatedCall(plivoDialect(options), (onFrame) => wsLink(ws, onFrame), options);
}
