/**
 * RFC 6455 framing for the load generator's raw client (raw-websocket.ts): `clientFrame` builds one masked
 * client frame, and `FrameReader` turns the server's byte stream (unmasked frames, split anywhere by TCP) into
 * whole messages, control frames included. Only what a client of Kuma meets: no extensions (any RSV bit is a
 * protocol error), text and binary messages, fragmentation, close, ping and pong.
 */

export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** A frame the peer sent that RFC 6455 forbids: the connection must be failed (close 1002). */
export class WebSocketProtocolError extends Error {}

/**
 * One final (FIN) client frame, masked with `mask` (4 bytes) as RFC 6455 §5.3 requires of every client
 * frame. The masking loop runs once per frame built, so it is written for clarity, not speed.
 */
export function clientFrame(opcode: number, payload: Buffer, mask: Buffer): Buffer {
  const length = payload.length;
  const lengthBytes = length < 126 ? 0 : length < 0x10000 ? 2 : 8;
  const frame = Buffer.allocUnsafe(2 + lengthBytes + 4 + length);
  frame[0] = 0x80 | opcode;
  if (lengthBytes === 0) frame[1] = 0x80 | length;
  else if (lengthBytes === 2) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  const start = 2 + lengthBytes + 4;
  mask.copy(frame, start - 4, 0, 4);
  for (let i = 0; i < length; i++) frame[start + i] = payload[i]! ^ mask[i & 3]!;
  return frame;
}

export interface FrameHandlers {
  /** A whole text (opcode 1) or binary (2) message, fragments joined. The payload is only valid during the call. */
  message(opcode: number, payload: Buffer): void;
  ping(payload: Buffer): void;
  /** A pong (answers to our pings); ignored when absent. */
  pong?(payload: Buffer): void;
  /** The server's close frame: its status code (1005 when it gave none) and reason. */
  close(code: number, reason: string): void;
}

interface FrameHead {
  fin: boolean;
  opcode: number;
  headLength: number;
  payloadLength: number;
}

/**
 * Reads server frames from chunks cut at arbitrary byte boundaries. Chunks are kept as they come and joined
 * only once enough bytes have arrived for the next frame (its head, then its payload), so a frame split into
 * many small chunks is copied once, not once per chunk.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes needed before parsing can make progress: a frame head's first 2 bytes, or all of a known frame. */
  private needed = 2;
  private fragments: Buffer[] = [];
  private fragmentOpcode = 0;
  private fragmentBytes = 0;

  constructor(
    private readonly handlers: FrameHandlers,
    private readonly maxMessageBytes = 64 * 1024 * 1024,
  ) {}

  /** Throws WebSocketProtocolError on a forbidden frame; the caller fails the connection. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.needed) return;
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    let offset = 0;
    for (;;) {
      const head = this.readHead(data, offset);
      const end = head === null ? -1 : offset + head.headLength + head.payloadLength;
      if (head === null || end > data.length) {
        this.needed = head === null ? this.headBytesNeeded(data, offset) : end - offset;
        break;
      }
      this.deliver(head, data.subarray(offset + head.headLength, end));
      offset = end;
    }
    const rest = data.subarray(offset);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
  }

  /** How many bytes from `offset` the head needs to be read (2, 4 or 10). */
  private headBytesNeeded(data: Buffer, offset: number): number {
    if (data.length - offset < 2) return 2;
    const length7 = data[offset + 1]! & 0x7f;
    return length7 === 127 ? 10 : length7 === 126 ? 4 : 2;
  }

  private readHead(data: Buffer, offset: number): FrameHead | null {
    const available = data.length - offset;
    if (available < 2 || available < this.headBytesNeeded(data, offset)) return null;
    const b0 = data[offset]!;
    const b1 = data[offset + 1]!;
    if (b0 & 0x70) throw new WebSocketProtocolError('RSV bit set without a negotiated extension');
    if (b1 & 0x80) throw new WebSocketProtocolError('server frames must not be masked');
    const length7 = b1 & 0x7f;
    let payloadLength = length7;
    let headLength = 2;
    if (length7 === 126) {
      payloadLength = data.readUInt16BE(offset + 2);
      headLength = 4;
    } else if (length7 === 127) {
      const long = data.readBigUInt64BE(offset + 2);
      if (long > BigInt(this.maxMessageBytes)) throw new WebSocketProtocolError(`frame of ${long} bytes exceeds ${this.maxMessageBytes}`);
      payloadLength = Number(long);
      headLength = 10;
    }
    if (payloadLength > this.maxMessageBytes) throw new WebSocketProtocolError(`frame of ${payloadLength} bytes exceeds ${this.maxMessageBytes}`);
    return { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, headLength, payloadLength };
  }

  private deliver(head: FrameHead, payload: Buffer): void {
    const { fin, opcode } = head;
    if (opcode >= 0x8) {
      // Control frames may come between the fragments of a message, but are never fragmented themselves.
      if (!fin || payload.length > 125) throw new WebSocketProtocolError('control frames must be final and at most 125 bytes');
      if (opcode === OPCODE.ping) this.handlers.ping(payload);
      else if (opcode === OPCODE.close) {
        if (payload.length === 1) throw new WebSocketProtocolError('close frame with a 1-byte payload');
        this.handlers.close(payload.length >= 2 ? payload.readUInt16BE(0) : 1005, payload.subarray(2).toString('utf8'));
      } else if (opcode === OPCODE.pong) this.handlers.pong?.(payload);
      else throw new WebSocketProtocolError(`unknown control opcode ${opcode}`);
      return;
    }
    if (opcode === OPCODE.continuation) {
      if (this.fragments.length === 0) throw new WebSocketProtocolError('continuation frame without a message to continue');
      this.addFragment(payload);
      if (fin) {
        const whole = Buffer.concat(this.fragments, this.fragmentBytes);
        this.fragments = [];
        this.fragmentBytes = 0;
        this.handlers.message(this.fragmentOpcode, whole);
      }
      return;
    }
    if (opcode !== OPCODE.text && opcode !== OPCODE.binary) throw new WebSocketProtocolError(`unknown data opcode ${opcode}`);
    if (this.fragments.length > 0) throw new WebSocketProtocolError('new message before the previous one ended');
    if (fin) return this.handlers.message(opcode, payload);
    this.fragmentOpcode = opcode;
    this.addFragment(payload);
  }

  private addFragment(payload: Buffer): void {
    this.fragmentBytes += payload.length;
    if (this.fragmentBytes > this.maxMessageBytes) throw new WebSocketProtocolError(`message exceeds ${this.maxMessageBytes} bytes`);
    // The payload is a view of a buffer the next push reuses or drops: keep a copy.
    this.fragments.push(Buffer.from(payload));
  }
}
