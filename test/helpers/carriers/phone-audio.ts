/**
 * Phone-leg audio for simulated carriers: speech as Int16 PCM, in and out of the codecs carriers use
 * (G.711 μ-law/A-law, 16-bit little-endian PCM), and cut into the carrier's frames. Written independently
 * of Kuma's adapters (alawmulaw for G.711) so that a round trip through an adapter checks both.
 */
import alawmulaw from 'alawmulaw';

// alawmulaw ships a UMD bundle: Node's ESM loader exposes only its default export.
const { alaw, mulaw } = alawmulaw;

export type PhoneCodec = 'pcmu' | 'pcma' | 'l16';

export interface PhoneFormat {
  codec: PhoneCodec;
  sampleRate: 8000 | 16000;
}

/** Float samples in [-1, 1] (what the demo voice produces) → Int16 PCM. */
export function toInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767);
  return out;
}

/** PCM samples → the codec's bytes on the wire. */
export function encodePhone(pcm: Int16Array, codec: PhoneCodec): Uint8Array {
  if (codec === 'pcmu') return mulaw.encode(pcm);
  if (codec === 'pcma') return alaw.encode(pcm);
  const bytes = Buffer.alloc(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) bytes.writeInt16LE(pcm[i]!, i * 2);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** The codec's bytes → PCM samples (an odd trailing L16 byte is dropped: it is half a sample). */
export function decodePhone(bytes: Uint8Array, codec: PhoneCodec): Int16Array {
  if (codec === 'pcmu') return mulaw.decode(bytes);
  if (codec === 'pcma') return alaw.decode(bytes);
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(Math.floor(bytes.length / 2));
  for (let i = 0; i < out.length; i++) out[i] = view.readInt16LE(i * 2);
  return out;
}

export function bytesPerSecond(format: PhoneFormat): number {
  return format.sampleRate * (format.codec === 'l16' ? 2 : 1);
}

/** Milliseconds of audio that `bytes` bytes hold in this format. */
export function durationMs(format: PhoneFormat, bytes: number): number {
  return (bytes * 1000) / bytesPerSecond(format);
}

/** Cuts bytes into frames of `frameBytes` (the last is padded with the codec's silence so every frame is whole). */
export function frames(bytes: Uint8Array, frameBytes: number, codec: PhoneCodec): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += frameBytes) {
    const frame = new Uint8Array(frameBytes).fill(silenceByte(codec));
    frame.set(bytes.subarray(at, Math.min(at + frameBytes, bytes.length)));
    out.push(frame);
  }
  return out;
}

/** The byte that encodes silence: 0xFF in μ-law, 0xD5 in A-law, 0 in L16. */
export function silenceByte(codec: PhoneCodec): number {
  return codec === 'pcmu' ? 0xff : codec === 'pcma' ? 0xd5 : 0;
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}
