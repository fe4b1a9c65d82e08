/**
 * A simulated Asterisk AudioSocket client (what `AudioSocket(uuid,host:port)` in a dialplan does): over TCP,
 * the call's UUID frame (0x01, 16 bytes), then 20 ms audio frames (0x10, 320 bytes of 8 kHz s16le), DTMF
 * (0x03), hangup (0x00). Reads Kuma's frames (audio 0x10, hangup 0x00) from the byte stream however TCP
 * splits it. AudioSocket has no marks and no clear.
 */
import { randomUUID } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { SimulatedCall, socketLink, type CarrierDialect, type ServerFrame, type SimulatedCallOptions, type WireFrame } from './simulated-call.js';

export interface AudioSocketCallOptions extends SimulatedCallOptions {
  /** The dialplan's UUID (canonical form); a fresh one by default. */
  uuid?: string;
}

function tlv(kind: number, payload: Uint8Array = new Uint8Array(0)): WireFrame {
  const frame = Buffer.alloc(3 + payload.length);
  frame.writeUInt8(kind, 0);
  frame.writeUInt16BE(payload.length, 1);
  frame.set(payload, 3);
  return { binary: new Uint8Array(frame) };
}

export function audioSocketDialect(options: AudioSocketCallOptions = {}): CarrierDialect & { readonly uuid: string } {
  const uuid = options.uuid ?? randomUUID();
  let pending = Buffer.alloc(0);
  return {
    carrier: 'audiosocket',
    uuid,
    format: { codec: 'l16', sampleRate: 8000 },
    mediaFrameBytes: 320,
    echoMarksOnClear: false,
    opening: () => [tlv(0x01, Buffer.from(uuid.replace(/-/g, ''), 'hex'))],
    media: (bytes) => tlv(0x10, bytes),
    dtmf: (digit) => tlv(0x03, Buffer.from(digit, 'ascii')),
    closing: () => [tlv(0x00)],
    read(frame): ServerFrame[] {
      if ('text' in frame) throw new Error('audiosocket: text on a TCP byte stream?');
      pending = Buffer.concat([pending, frame.binary]);
      const out: ServerFrame[] = [];
      while (pending.length >= 3 && pending.length >= 3 + pending.readUInt16BE(1)) {
        const kind = pending[0]!;
        const length = pending.readUInt16BE(1);
        const payload = new Uint8Array(pending.subarray(3, 3 + length));
        pending = pending.subarray(3 + length);
        if (kind === 0x10) out.push({ kind: 'audio', bytes: payload });
        else if (kind === 0x00) out.push({ kind: 'hangup' });
        else throw new Error(`audiosocket: Kuma sent frame kind 0x${kind.toString(16)}`);
      }
      return out;
    },
  };
}

/** Dials Kuma's AudioSocket listener; resolves once connected (call `open()` to send the UUID). */
export function connectAudioSocket(port: number, host = '127.0.0.1', options: AudioSocketCallOptions = {}): Promise<SimulatedCall> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ port, host });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(new SimulatedCall(audioSocketDialect(options), (onFrame) => socketLink(socket, onFrame), options));
    });
  });
}
