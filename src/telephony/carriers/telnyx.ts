/**
 * Telnyx Media Streaming (Call Control `stream_url`, TeXML `<Stream>`), bidirectional in RTP mode: JSON text
 * frames with Telnyx's snake_case names (`stream_id`, `sequence_number`, `media_format.sample_rate`). In:
 * `connected`, `start`, `media`, `dtmf`, `mark`, `error`, `stop`; out: `media`, `mark`, `clear`. Audio is the
 * call's RTP payload without headers; Kuma takes PCMU or PCMA at 8 kHz and answers in the same codec.
 */
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { asParameter, bytesFor, decimalString, decodeBase64, digitString, encodeBase64, parseEnvelope, unknownEvent, validate } from './wire.js';

const CARRIER = 'telnyx';
/** The header (and `connected` field) in which Telnyx forwards the stream's `stream_auth_token`. */
const AUTH_TOKEN_FIELD = 'x-telnyx-streaming-auth-token';

const Connected = z.object({ version: z.string().optional(), [AUTH_TOKEN_FIELD]: z.string().optional() });

/** Telnyx's API takes custom parameters as `[{name, value}]`; accept that list or a plain object. */
const CustomParameters = z.union([z.array(z.object({ name: z.string(), value: z.unknown() })), z.record(z.string(), z.unknown())]);

const Start = z.object({
  sequence_number: decimalString.optional(),
  stream_id: z.string().min(1),
  start: z.object({
    call_control_id: z.string().min(1),
    user_id: z.string().optional(),
    client_state: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    custom_parameters: CustomParameters.optional(),
    // L16 is Telnyx's RTP payload, big-endian (RFC 3551), and the other codecs are not G.711: only PCMU/PCMA here.
    media_format: z.object({
      encoding: z.enum(['PCMU', 'PCMA'], { message: 'Kuma takes PCMU or PCMA (set the stream codec to PCMU or PCMA)' }),
      sample_rate: z.literal(8000),
      channels: z.literal(1).optional(),
    }),
  }),
});

const Media = z.object({
  sequence_number: decimalString.optional(),
  stream_id: z.string().optional(),
  media: z.object({
    track: z.enum(['inbound', 'outbound']).optional(),
    chunk: decimalString.optional(),
    timestamp: decimalString.optional(),
    payload: z.string(),
  }),
});

const Dtmf = z.object({ sequence_number: decimalString.optional(), dtmf: z.object({ digit: digitString }) });
const Mark = z.object({ sequence_number: decimalString.optional(), mark: z.object({ name: z.string() }) });
const Stop = z.object({ sequence_number: decimalString.optional() });
const ErrorFrame = z.object({ payload: z.object({ code: z.unknown().optional(), title: z.string().optional(), detail: z.string().optional() }).optional() });

export class TelnyxAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;
  private authToken: string | undefined;

  parseText(text: string): CarrierInbound[] {
    const { name, frame } = parseEnvelope(CARRIER, text);
    switch (name) {
      case 'connected':
        this.authToken = validate(CARRIER, name, Connected, frame)[AUTH_TOKEN_FIELD];
        return [{ type: 'connected' }];
      case 'start':
        return [{ type: 'start', start: this.start(validate(CARRIER, name, Start, frame)) }];
      case 'media': {
        const { media } = validate(CARRIER, name, Media, frame);
        const audio = decodeBase64(CARRIER, 'media.payload', media.payload);
        if (media.track === 'outbound') return [{ type: 'ignored', detail: 'outbound track' }];
        return [{ type: 'media', audio }];
      }
      case 'dtmf':
        return [{ type: 'dtmf', digit: validate(CARRIER, name, Dtmf, frame).dtmf.digit }];
      case 'mark':
        return [{ type: 'mark', name: validate(CARRIER, name, Mark, frame).mark.name }];
      case 'error': {
        // Telnyx reports a problem with what we sent (e.g. a malformed media frame); the stream goes on.
        const { payload } = validate(CARRIER, name, ErrorFrame, frame);
        return [{ type: 'ignored', detail: `telnyx error ${String(payload?.code ?? '')} ${payload?.title ?? ''}: ${payload?.detail ?? ''}`.trim() }];
      }
      case 'stop':
        validate(CARRIER, name, Stop, frame);
        return [{ type: 'stop' }];
      default:
        throw unknownEvent(CARRIER, name);
    }
  }

  private start(frame: z.infer<typeof Start>): CallStart {
    const { start } = frame;
    const format: CallAudioFormat = { codec: start.media_format.encoding === 'PCMA' ? 'pcma' : 'pcmu', sampleRate: 8000 };
    const customParameters: Record<string, string> = {};
    const given = start.custom_parameters ?? {};
    if (Array.isArray(given)) for (const { name, value } of given) customParameters[name] = asParameter(value);
    else for (const [name, value] of Object.entries(given)) customParameters[name] = asParameter(value);
    // Telnyx's own per-stream secret (`stream_auth_token`) is where a Telnyx integrator puts Kuma's call token.
    if (customParameters.token === undefined && this.authToken !== undefined) customParameters.token = this.authToken;
    return {
      callId: start.call_control_id,
      streamId: frame.stream_id,
      ...(start.from !== undefined && { from: start.from }),
      ...(start.to !== undefined && { to: start.to }),
      customParameters,
      format,
    };
  }

  parseBinary(): CarrierInbound[] {
    throw new CarrierFrameError(`${CARRIER}: binary frame received; Telnyx media streams send JSON text frames only`);
  }

  outboundFormat(start: CallStart): CallAudioFormat {
    return start.format;
  }

  frameBytes(start: CallStart): number {
    return bytesFor(start.format, 20);
  }

  media(audio: Uint8Array): CarrierFrame {
    return { text: JSON.stringify({ event: 'media', media: { payload: encodeBase64(audio) } }) };
  }

  mark(name: string): CarrierFrame {
    return { text: JSON.stringify({ event: 'mark', mark: { name } }) };
  }

  clear(): CarrierFrame {
    return { text: JSON.stringify({ event: 'clear' }) };
  }

  hangup(): CarrierFrame[] {
    return [];
  }
}

export function createTelnyxAdapter(): CarrierAdapter {
  return new TelnyxAdapter();
}
