/**
 * Plivo Audio Streaming (`<Stream bidirectional="true">`): JSON text frames, numeric `sequenceNumber`. In:
 * `start` (with the XML's `extraHeaders` as an `extra_headers` string), `media`, `dtmf`, `playedStream` (the
 * echo of our `checkpoint`), `clearedAudio`; out: `playAudio` (its media carries contentType and sampleRate),
 * `checkpoint`, `clearAudio`. Plivo ends a stream by closing the socket. Audio is μ-law 8 kHz or L16 8/16 kHz,
 * the stream's `contentType`; Kuma answers in the same.
 */
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { bytesFor, decodeBase64, digitString, encodeBase64, parseEnvelope, unknownEvent, validate } from './wire.js';

const CARRIER = 'plivo';
const CONTENT_TYPE = { pcmu: 'audio/x-mulaw', pcma: 'audio/x-alaw', l16: 'audio/x-l16' } as const;

const sequenceNumber = z.number().int().nonnegative().optional();

const MediaFormat = z
  .object({ encoding: z.enum(['audio/x-mulaw', 'audio/x-l16']), sampleRate: z.union([z.literal(8000), z.literal(16000)]) })
  .refine((f) => f.encoding === 'audio/x-l16' || f.sampleRate === 8000, { message: 'audio/x-mulaw is 8000 Hz only' });

const Start = z.object({
  sequenceNumber,
  start: z.object({
    callId: z.string().min(1),
    streamId: z.string().min(1),
    accountId: z.string().optional(),
    tracks: z.array(z.string()).optional(),
    mediaFormat: MediaFormat,
  }),
  extra_headers: z.string().optional(),
});

const Media = z.object({
  sequenceNumber,
  streamId: z.string().optional(),
  media: z.object({
    track: z.enum(['inbound', 'outbound']).optional(),
    timestamp: z.string().optional(),
    chunk: z.number().int().optional(),
    payload: z.string(),
  }),
});

const Dtmf = z.object({ sequenceNumber, dtmf: z.object({ digit: digitString, track: z.string().optional() }) });
const PlayedStream = z.object({ sequenceNumber, streamId: z.string().optional(), name: z.string() });
const Acknowledgement = z.object({ sequenceNumber, streamId: z.string().optional() });

/** `extraHeaders="a=1,b=2"` reaches the socket as `"a=1;b=2"` (Plivo's examples show both separators). */
export function parseExtraHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(/[;,]/)) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return headers;
}

export class PlivoAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;
  private streamId: string | null = null;
  private format: CallAudioFormat = { codec: 'pcmu', sampleRate: 8000 };

  parseText(text: string): CarrierInbound[] {
    const { name, frame } = parseEnvelope(CARRIER, text);
    switch (name) {
      case 'start': {
        const { start, extra_headers } = validate(CARRIER, name, Start, frame);
        const { encoding, sampleRate } = start.mediaFormat;
        this.streamId = start.streamId;
        this.format = encoding === 'audio/x-mulaw' ? { codec: 'pcmu', sampleRate: 8000 } : { codec: 'l16', sampleRate };
        const callStart: CallStart = {
          callId: start.callId,
          streamId: start.streamId,
          customParameters: extra_headers === undefined ? {} : parseExtraHeaders(extra_headers),
          format: this.format,
        };
        return [{ type: 'start', start: callStart }];
      }
      case 'media': {
        const { media } = validate(CARRIER, name, Media, frame);
        const audio = decodeBase64(CARRIER, 'media.payload', media.payload);
        if (media.track === 'outbound') return [{ type: 'ignored', detail: 'outbound track' }];
        if (this.format.codec === 'l16' && audio.length % 2 !== 0)
          throw new CarrierFrameError(`${CARRIER}: L16 media payload of ${audio.length} bytes is not whole 16-bit samples`);
        return [{ type: 'media', audio }];
      }
      case 'dtmf':
        return [{ type: 'dtmf', digit: validate(CARRIER, name, Dtmf, frame).dtmf.digit }];
      case 'playedStream':
        return [{ type: 'mark', name: validate(CARRIER, name, PlayedStream, frame).name }];
      case 'clearedAudio':
        validate(CARRIER, name, Acknowledgement, frame);
        return [{ type: 'ignored', detail: 'clearedAudio' }];
      default:
        throw unknownEvent(CARRIER, name);
    }
  }

  parseBinary(): CarrierInbound[] {
    throw new CarrierFrameError(`${CARRIER}: binary frame received; Plivo audio streams send JSON text frames only`);
  }

  outboundFormat(start: CallStart): CallAudioFormat {
    return start.format;
  }

  frameBytes(start: CallStart): number {
    return bytesFor(start.format, 20);
  }

  media(audio: Uint8Array): CarrierFrame {
    const { codec, sampleRate } = this.format;
    return { text: JSON.stringify({ event: 'playAudio', media: { contentType: CONTENT_TYPE[codec], sampleRate, payload: encodeBase64(audio) } }) };
  }

  /** Plivo's mark is a `checkpoint`; it answers `playedStream` with the same name once the audio before it played. */
  mark(name: string): CarrierFrame {
    return { text: JSON.stringify({ event: 'checkpoint', streamId: this.id(), name }) };
  }

  clear(): CarrierFrame {
    return { text: JSON.stringify({ event: 'clearAudio', streamId: this.id() }) };
  }

  hangup(): CarrierFrame[] {
    return [];
  }

  private id(): string {
    if (this.streamId === null) throw new Error('plivo: an outbound control frame before the stream started');
    return this.streamId;
  }
}

export function createPlivoAdapter(): CarrierAdapter {
  return new PlivoAdapter();
}
