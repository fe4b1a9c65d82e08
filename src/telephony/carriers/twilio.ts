/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream>`): JSON text frames both ways. In: `connected`,
 * `start`, `media`, `dtmf`, `mark`, `stop`, with Twilio's string-typed `sequenceNumber`, `chunk` and
 * `timestamp`; out: `media`, `mark`, `clear`, each carrying the `streamSid` learned from `start`. Audio is
 * μ-law 8 kHz both ways, without headers.
 */
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { bytesFor, decimalString, decodeBase64, digitString, encodeBase64, parseEnvelope, unknownEvent, validate } from './wire.js';

const CARRIER = 'twilio';
const ULAW_8K: CallAudioFormat = { codec: 'pcmu', sampleRate: 8000 };

const Connected = z.object({ protocol: z.string().optional(), version: z.string().optional() });

const Start = z.object({
  sequenceNumber: decimalString.optional(),
  streamSid: z.string().min(1),
  start: z.object({
    streamSid: z.string().min(1),
    callSid: z.string().min(1),
    accountSid: z.string().optional(),
    tracks: z.array(z.string()).optional(),
    // Twilio streams only μ-law 8 kHz mono; anything else is not Twilio.
    mediaFormat: z.object({ encoding: z.literal('audio/x-mulaw'), sampleRate: z.literal(8000), channels: z.literal(1).optional() }),
    customParameters: z.record(z.string(), z.string()).optional(),
  }),
});

const Media = z.object({
  sequenceNumber: decimalString.optional(),
  streamSid: z.string().optional(),
  media: z.object({
    track: z.enum(['inbound', 'outbound']).optional(),
    chunk: decimalString.optional(),
    timestamp: decimalString.optional(),
    payload: z.string(),
  }),
});

const Dtmf = z.object({ sequenceNumber: decimalString.optional(), dtmf: z.object({ track: z.string().optional(), digit: digitString }) });
const Mark = z.object({ sequenceNumber: decimalString.optional(), mark: z.object({ name: z.string() }) });
const Stop = z.object({ sequenceNumber: decimalString.optional(), stop: z.object({ callSid: z.string().optional() }).optional() });

export class TwilioAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;
  private streamSid: string | null = null;

  parseText(text: string): CarrierInbound[] {
    const { name, frame } = parseEnvelope(CARRIER, text);
    switch (name) {
      case 'connected':
        validate(CARRIER, name, Connected, frame);
        return [{ type: 'connected' }];
      case 'start': {
        const { start } = validate(CARRIER, name, Start, frame);
        this.streamSid = start.streamSid;
        const callStart: CallStart = {
          callId: start.callSid,
          streamId: start.streamSid,
          customParameters: { ...start.customParameters },
          format: ULAW_8K,
        };
        return [{ type: 'start', start: callStart }];
      }
      case 'media': {
        const { media } = validate(CARRIER, name, Media, frame);
        const audio = decodeBase64(CARRIER, 'media.payload', media.payload);
        // With `track="both_tracks"` Twilio also streams what the caller hears (our own audio): not the caller.
        if (media.track === 'outbound') return [{ type: 'ignored', detail: 'outbound track' }];
        return [{ type: 'media', audio }];
      }
      case 'dtmf':
        return [{ type: 'dtmf', digit: validate(CARRIER, name, Dtmf, frame).dtmf.digit }];
      case 'mark':
        return [{ type: 'mark', name: validate(CARRIER, name, Mark, frame).mark.name }];
      case 'stop':
        validate(CARRIER, name, Stop, frame);
        return [{ type: 'stop' }];
      default:
        throw unknownEvent(CARRIER, name);
    }
  }

  parseBinary(): CarrierInbound[] {
    throw new CarrierFrameError(`${CARRIER}: binary frame received; Twilio Media Streams send JSON text frames only`);
  }

  outboundFormat(): CallAudioFormat {
    return ULAW_8K;
  }

  frameBytes(): number {
    return bytesFor(ULAW_8K, 20);
  }

  media(audio: Uint8Array): CarrierFrame {
    return { text: JSON.stringify({ event: 'media', streamSid: this.sid(), media: { payload: encodeBase64(audio) } }) };
  }

  mark(name: string): CarrierFrame {
    return { text: JSON.stringify({ event: 'mark', streamSid: this.sid(), mark: { name } }) };
  }

  clear(): CarrierFrame {
    return { text: JSON.stringify({ event: 'clear', streamSid: this.sid() }) };
  }

  hangup(): CarrierFrame[] {
    return [];
  }

  /** Every outbound frame names the stream; the core sends none before `start`, so this is a programming error. */
  private sid(): string {
    if (this.streamSid === null) throw new Error('twilio: an outbound frame before the stream started');
    return this.streamSid;
  }
}

export function createTwilioAdapter(): CarrierAdapter {
  return new TwilioAdapter();
}
