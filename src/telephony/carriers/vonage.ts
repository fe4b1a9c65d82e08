/**
 * Vonage Voice API WebSockets (NCCO `connect` to a `websocket` endpoint): the first text frame is
 * `websocket:connected` with the negotiated `content-type` (`audio/l16;rate=16000` or `;rate=8000`) and the
 * NCCO's custom `headers` at its top level; audio then flows as binary frames of 16-bit little-endian PCM,
 * 20 ms each (640 bytes at 16 kHz), both ways. Text commands: `{"action":"notify","payload":…}`, which Vonage
 * echoes as `websocket:notify` once the audio queued before it has played (our mark), and
 * `{"action":"clear"}`, which drops the queued audio and is acknowledged by `websocket:cleared`.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { asParameter, bytesFor, digitString, parseEnvelope, unknownEvent, validate } from './wire.js';

const CARRIER = 'vonage';
const CONTENT_TYPE = /^audio\/l16;\s*rate=(8000|16000)$/i;
/** Headers an integrator may set on the NCCO endpoint to name the call (Vonage's connected frame carries no call id). */
const CALL_ID_HEADERS = ['uuid', 'call_uuid', 'conversation_uuid'];

const Connected = z.object({ 'content-type': z.string().regex(CONTENT_TYPE, 'expected audio/l16;rate=16000 or audio/l16;rate=8000') });
const Dtmf = z.object({ digit: digitString, duration: z.number().optional() });
const Notify = z.object({ payload: z.record(z.string(), z.unknown()) });

export class VonageAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;

  parseText(text: string): CarrierInbound[] {
    const { name, frame } = parseEnvelope(CARRIER, text);
    switch (name) {
      case 'websocket:connected':
        return [{ type: 'start', start: this.start(validate(CARRIER, name, Connected, frame), frame) }];
      case 'websocket:dtmf':
        return [{ type: 'dtmf', digit: validate(CARRIER, name, Dtmf, frame).digit }];
      case 'websocket:notify': {
        const { payload } = validate(CARRIER, name, Notify, frame);
        // Only notifications Kuma asked for carry a string `name`; any other payload is not a mark of ours.
        return typeof payload.name === 'string'
          ? [{ type: 'mark', name: payload.name }]
          : [{ type: 'ignored', detail: 'websocket:notify without a mark name' }];
      }
      case 'websocket:cleared':
        return [{ type: 'ignored', detail: 'websocket:cleared' }];
      default:
        throw unknownEvent(CARRIER, name);
    }
  }

  private start(connected: z.infer<typeof Connected>, frame: Record<string, unknown>): CallStart {
    const rate = Number(CONTENT_TYPE.exec(connected['content-type'])![1]) as 8000 | 16000;
    const customParameters: Record<string, string> = {};
    for (const [key, value] of Object.entries(frame)) {
      if (key !== 'event' && key !== 'content-type') customParameters[key] = asParameter(value);
    }
    const named = CALL_ID_HEADERS.map((h) => customParameters[h]).find((v) => v !== undefined && v.length > 0);
    const callId = named ?? randomUUID();
    return { callId, streamId: callId, customParameters, format: { codec: 'l16', sampleRate: rate } };
  }

  /** Caller audio: 16-bit samples, so an odd length cannot be Vonage audio. */
  parseBinary(bytes: Uint8Array): CarrierInbound[] {
    if (bytes.length % 2 !== 0) throw new CarrierFrameError(`${CARRIER}: audio frame of ${bytes.length} bytes is not whole 16-bit samples`);
    return [{ type: 'media', audio: bytes }];
  }

  outboundFormat(start: CallStart): CallAudioFormat {
    return start.format;
  }

  frameBytes(start: CallStart): number {
    return bytesFor(start.format, 20);
  }

  media(audio: Uint8Array): CarrierFrame {
    return { binary: audio };
  }

  mark(name: string): CarrierFrame {
    return { text: JSON.stringify({ action: 'notify', payload: { name } }) };
  }

  clear(): CarrierFrame {
    return { text: JSON.stringify({ action: 'clear' }) };
  }

  hangup(): CarrierFrame[] {
    return [];
  }
}

export function createVonageAdapter(): CarrierAdapter {
  return new VonageAdapter();
}
