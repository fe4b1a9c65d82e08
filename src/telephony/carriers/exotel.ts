/**
 * Exotel AgentStream (Voicebot applet, bidirectional): Twilio-like JSON text frames with snake_case names
 * (`stream_sid`, `sequence_number`, `custom_parameters`) and string-typed numbers (`sample_rate: "8000"`). In:
 * `connected`, `start`, `media`, `dtmf`, `mark`, `stop`; out: `media`, `mark`, `clear` with `stream_sid`.
 * Audio is raw 16-bit little-endian PCM ("audio/x-raw") at the applet's sample rate, or μ-law 8 kHz when the
 * stream was started with that content type; Kuma answers in the same format.
 */
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { asParameter, bytesFor, decimalString, decodeBase64, digitString, encodeBase64, parseEnvelope, unknownEvent, validate } from './wire.js';

const CARRIER = 'exotel';
/**
 * Exotel asks for outbound chunks of at least 100 ms in multiples of 320 bytes (smaller ones risk gaps from
 * network jitter); 100 ms of L16 is 1600 bytes at 8 kHz and 3200 at 16 kHz, both multiples of 320.
 */
const OUTBOUND_CHUNK_MS = 100;

const Start = z.object({
  sequence_number: decimalString.optional(),
  stream_sid: z.string().optional(),
  start: z.object({
    stream_sid: z.string().min(1),
    call_sid: z.string().min(1),
    account_sid: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    custom_parameters: z.record(z.string(), z.unknown()).optional(),
    media_format: z.object({
      // "base64" is how Exotel's earlier documentation named the same raw PCM stream.
      encoding: z.enum(['audio/x-raw', 'base64', 'audio/x-mulaw']),
      sample_rate: z.enum(['8000', '16000'], { message: 'Kuma takes sample_rate "8000" or "16000" (set the applet\'s sample-rate)' }),
      bit_rate: z.string().optional(),
    }),
  }),
});

const Media = z.object({
  sequence_number: decimalString.optional(),
  stream_sid: z.string().optional(),
  media: z.object({ chunk: decimalString.optional(), timestamp: decimalString.optional(), payload: z.string() }),
});

const Dtmf = z.object({ sequence_number: decimalString.optional(), dtmf: z.object({ digit: digitString, duration: z.string().optional() }) });
const Mark = z.object({ sequence_number: decimalString.optional(), mark: z.object({ name: z.string() }) });
const Stop = z.object({ sequence_number: decimalString.optional(), stop: z.object({ reason: z.string().optional() }).optional() });

export class ExotelAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;
  private streamSid: string | null = null;
  private format: CallAudioFormat = { codec: 'l16', sampleRate: 8000 };

  parseText(text: string): CarrierInbound[] {
    const { name, frame } = parseEnvelope(CARRIER, text);
    switch (name) {
      case 'connected':
        return [{ type: 'connected' }];
      case 'start':
        return [{ type: 'start', start: this.start(validate(CARRIER, name, Start, frame)) }];
      case 'media': {
        const { media } = validate(CARRIER, name, Media, frame);
        const audio = decodeBase64(CARRIER, 'media.payload', media.payload);
        if (this.format.codec === 'l16' && audio.length % 2 !== 0)
          throw new CarrierFrameError(`${CARRIER}: PCM media payload of ${audio.length} bytes is not whole 16-bit samples`);
        return [{ type: 'media', audio }];
      }
      case 'dtmf':
        return [{ type: 'dtmf', digit: validate(CARRIER, name, Dtmf, frame).dtmf.digit }];
      case 'mark':
        return [{ type: 'mark', name: validate(CARRIER, name, Mark, frame).mark.name }];
      case 'stop': {
        const reason = validate(CARRIER, name, Stop, frame).stop?.reason;
        return [reason === undefined ? { type: 'stop' } : { type: 'stop', reason }];
      }
      default:
        throw unknownEvent(CARRIER, name);
    }
  }

  private start({ start }: z.infer<typeof Start>): CallStart {
    const { encoding, sample_rate } = start.media_format;
    if (encoding === 'audio/x-mulaw' && sample_rate !== '8000') throw new CarrierFrameError(`${CARRIER}: audio/x-mulaw is 8000 Hz only`);
    this.streamSid = start.stream_sid;
    this.format = encoding === 'audio/x-mulaw' ? { codec: 'pcmu', sampleRate: 8000 } : { codec: 'l16', sampleRate: sample_rate === '16000' ? 16000 : 8000 };
    const customParameters: Record<string, string> = {};
    for (const [key, value] of Object.entries(start.custom_parameters ?? {})) customParameters[key] = asParameter(value);
    return {
      callId: start.call_sid,
      streamId: start.stream_sid,
      ...(start.from !== undefined && { from: start.from }),
      ...(start.to !== undefined && { to: start.to }),
      customParameters,
      format: this.format,
    };
  }

  parseBinary(): CarrierInbound[] {
    throw new CarrierFrameError(`${CARRIER}: binary frame received; Exotel streams send JSON text frames only`);
  }

  outboundFormat(start: CallStart): CallAudioFormat {
    return start.format;
  }

  frameBytes(start: CallStart): number {
    return bytesFor(start.format, OUTBOUND_CHUNK_MS);
  }

  media(audio: Uint8Array): CarrierFrame {
    return { text: JSON.stringify({ event: 'media', stream_sid: this.sid(), media: { payload: encodeBase64(audio) } }) };
  }

  mark(name: string): CarrierFrame {
    return { text: JSON.stringify({ event: 'mark', stream_sid: this.sid(), mark: { name } }) };
  }

  clear(): CarrierFrame {
    return { text: JSON.stringify({ event: 'clear', stream_sid: this.sid() }) };
  }

  hangup(): CarrierFrame[] {
    return [];
  }

  private sid(): string {
    if (this.streamSid === null) throw new Error('exotel: an outbound frame before the stream started');
    return this.streamSid;
  }
}

export function createExotelAdapter(): CarrierAdapter {
  return new ExotelAdapter();
}
