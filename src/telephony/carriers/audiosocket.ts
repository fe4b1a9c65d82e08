/**
 * Asterisk AudioSocket (TCP, `AudioSocket(uuid,host:port)` in the dialplan): a byte stream of frames, each
 * kind (1 byte), payload length (2 bytes, big-endian), payload. Kinds: 0x01 the call's UUID (16 bytes, the
 * first frame), 0x10 audio (signed 16-bit little-endian PCM, 8 kHz mono), 0x03 a DTMF digit (1 ASCII byte),
 * 0x00 hangup, 0xff error (an optional error code). Audio goes back as 0x10 frames of 20 ms (320 bytes) and
 * Kuma hangs up with a 0x00 frame. TCP delivers the stream in arbitrary pieces, so the adapter buffers a
 * partial frame until the rest arrives. There are no marks and no clear: Asterisk plays what it receives
 * as it receives it, so what has not been sent has not been played.
 */
import { CarrierFrameError, type CallAudioFormat, type CallStart, type CarrierAdapter, type CarrierFrame, type CarrierInbound } from './contract.js';
import { bytesFor } from './wire.js';

const CARRIER = 'audiosocket';
const SLIN_8K: CallAudioFormat = { codec: 'l16', sampleRate: 8000 };
const HEADER_BYTES = 3;

export const AudioSocketKind = { hangup: 0x00, uuid: 0x01, dtmf: 0x03, audio: 0x10, error: 0xff } as const;

const DTMF = /^[0-9A-D*#]$/;

/** One AudioSocket frame: kind, 16-bit big-endian length, payload. */
export function audioSocketFrame(kind: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  if (payload.length > 0xffff) throw new RangeError(`audiosocket: a frame payload holds at most 65535 bytes, not ${payload.length}`);
  const frame = new Uint8Array(HEADER_BYTES + payload.length);
  frame[0] = kind;
  frame[1] = payload.length >> 8;
  frame[2] = payload.length & 0xff;
  frame.set(payload, HEADER_BYTES);
  return frame;
}

/** 16 bytes → the canonical lowercase 8-4-4-4-12 form. */
export function uuidString(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export class AudioSocketAdapter implements CarrierAdapter {
  readonly carrier = CARRIER;
  /** Bytes of a frame whose rest has not arrived yet (never more than one frame: 3 + 65535 bytes). */
  private pending: Buffer = Buffer.alloc(0);
  /** Once the stream is out of step nothing after it can be framed: every later read fails the same way. */
  private broken: CarrierFrameError | null = null;

  parseText(): CarrierInbound[] {
    throw new CarrierFrameError(`${CARRIER}: AudioSocket is a binary TCP protocol; text frames are not part of it`);
  }

  parseBinary(bytes: Uint8Array): CarrierInbound[] {
    if (this.broken) throw this.broken;
    const data = this.pending.length === 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.concat([this.pending, bytes]);
    const events: CarrierInbound[] = [];
    let at = 0;
    try {
      while (data.length - at >= HEADER_BYTES) {
        const length = data.readUInt16BE(at + 1);
        if (data.length - at < HEADER_BYTES + length) break;
        const kind = data[at]!;
        // A copy: the caller may reuse its read buffer, and the core keeps audio past this call.
        const payload = new Uint8Array(data.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length));
        const event = this.frame(kind, payload);
        if (event) events.push(event);
        at += HEADER_BYTES + length;
      }
    } catch (err) {
      this.broken = err as CarrierFrameError;
      this.pending = Buffer.alloc(0);
      throw err;
    }
    // Keep only the incomplete tail, copied so that it does not pin (or alias) the caller's buffer.
    this.pending = at === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(at));
    return events;
  }

  private frame(kind: number, payload: Uint8Array): CarrierInbound | null {
    switch (kind) {
      case AudioSocketKind.uuid: {
        if (payload.length !== 16) throw new CarrierFrameError(`${CARRIER}: UUID frame of ${payload.length} bytes (expected 16)`);
        const callId = uuidString(payload);
        return { type: 'start', start: { callId, streamId: callId, customParameters: {}, format: SLIN_8K } };
      }
      case AudioSocketKind.audio:
        if (payload.length % 2 !== 0) throw new CarrierFrameError(`${CARRIER}: audio frame of ${payload.length} bytes is not whole 16-bit samples`);
        return payload.length === 0 ? null : { type: 'media', audio: payload };
      case AudioSocketKind.dtmf: {
        const digit = payload.length === 1 ? String.fromCharCode(payload[0]!) : '';
        if (!DTMF.test(digit)) throw new CarrierFrameError(`${CARRIER}: DTMF frame must hold one digit (0-9, *, #, A-D)`);
        return { type: 'dtmf', digit };
      }
      case AudioSocketKind.hangup:
        return { type: 'stop', reason: 'hangup' };
      case AudioSocketKind.error:
        // Asterisk's own error codes are one byte; an application's may be longer. Either way the call is over.
        return { type: 'stop', reason: payload.length === 0 ? 'error' : `error 0x${Buffer.from(payload).toString('hex')}` };
      default:
        throw new CarrierFrameError(`${CARRIER}: unknown frame kind 0x${kind.toString(16).padStart(2, '0')}`);
    }
  }

  outboundFormat(): CallAudioFormat {
    return SLIN_8K;
  }

  frameBytes(): number {
    return bytesFor(SLIN_8K, 20);
  }

  media(audio: Uint8Array): CarrierFrame {
    return { binary: audioSocketFrame(AudioSocketKind.audio, audio) };
  }

  mark(): null {
    return null;
  }

  clear(): null {
    return null;
  }

  hangup(): CarrierFrame[] {
    return [{ binary: audioSocketFrame(AudioSocketKind.hangup) }];
  }
}

export function createAudioSocketAdapter(): CarrierAdapter {
  return new AudioSocketAdapter();
}
