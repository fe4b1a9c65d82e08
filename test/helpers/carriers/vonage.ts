/**
 * A simulated Vonage Voice API WebSocket (NCCO `connect` → `websocket` endpoint), as Vonage documents it: a
 * first text frame `websocket:connected` with `content-type: audio/l16;rate=16000` (or 8000) and the NCCO's
 * `headers` at its top level; caller audio as binary frames of exactly 20 ms (640 bytes at 16 kHz);
 * `websocket:dtmf`. Kuma's binary frames must be whole 20 ms frames; `notify` is echoed as `websocket:notify`
 * once the audio before it has played, `clear` is acknowledged with `websocket:cleared`. Vonage ends a call by
 * closing the socket.
 */
import type WebSocket from 'ws';
import { expectKeys, readJson } from './json-frames.js';
import { SimulatedCall, wsLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface VonageCallOptions extends SimulatedCallOptions {
  sampleRate?: 8000 | 16000;
  /** The NCCO endpoint's `headers`: where a Vonage integrator puts Kuma's call token. */
  headers?: Record<string, unknown>;
}

export function vonageDialect(options: VonageCallOptions = {}): CarrierDialect {
  const sampleRate = options.sampleRate ?? 16000;
  const frameBytes = (sampleRate * 2) / 50;
  const json = (value: unknown): WireFrame => ({ text: JSON.stringify(value) });
  return {
    carrier: 'vonage',
    format: { codec: 'l16', sampleRate },
    mediaFrameBytes: frameBytes,
    echoMarksOnClear: false,
    opening: () => [json({ event: 'websocket:connected', 'content-type': `audio/l16;rate=${sampleRate}`, ...options.headers })],
    media: (bytes) => ({ binary: bytes }),
    dtmf: (digit) => json({ event: 'websocket:dtmf', digit, duration: 260 }),
    closing: () => [],
    read(frame): ServerFrame[] {
      if ('binary' in frame) {
        if (frame.binary.length !== frameBytes)
          throw new Error(`vonage: audio frame of ${frame.binary.length} bytes; Vonage takes 20 ms frames of ${frameBytes}`);
        return [{ kind: 'audio', bytes: frame.binary }];
      }
      const msg = readJson(frame, 'vonage');
      switch (msg.action) {
        case 'notify': {
          expectKeys(msg, ['action', 'payload'], 'vonage: notify');
          if (typeof msg.payload !== 'object' || msg.payload === null) throw new Error('vonage: notify.payload must be an object');
          const name = typeof msg.payload.name === 'string' ? msg.payload.name : JSON.stringify(msg.payload);
          return [{ kind: 'mark', name, echo: json({ event: 'websocket:notify', payload: msg.payload }) }];
        }
        case 'clear':
          expectKeys(msg, ['action'], 'vonage: clear');
          return [{ kind: 'clear', ack: json({ event: 'websocket:cleared' }) }];
        default:
          throw new Error(`vonage: unknown action ${JSON.stringify(msg.action)}`);
      }
    },
  };
}

export function simulateVonage(ws: WebSocket, options: VonageCallOptions = {}): SimulatedCall {
  return new SimulatedCall(vonageDialect(options), (onFrame) => wsLink(ws, onFrame), options);
}
