/**
 * What every JSON-speaking carrier adapter needs: parse a text frame as a JSON object, validate it with a
 * zod schema into a CarrierFrameError that names the carrier and the field, decode base64 strictly, and
 * the byte arithmetic of the phone-leg formats. Kept here so each carrier file holds only its own protocol.
 */
import { z } from 'zod';
import { CarrierFrameError, type CallAudioFormat } from './contract.js';

/** A frame's text can be anything the socket delivered; a message quotes at most this much of it. */
const QUOTE_CHARS = 60;

/** The frame as a JSON object with a string `event` (every JSON carrier has one), or a CarrierFrameError. */
export function parseEnvelope(carrier: string, text: string, key = 'event'): { name: string; frame: Record<string, unknown> } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CarrierFrameError(`${carrier}: frame is not JSON: ${quote(text)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new CarrierFrameError(`${carrier}: frame is not a JSON object: ${quote(text)}`);
  const frame = value as Record<string, unknown>;
  const name = frame[key];
  if (typeof name !== 'string') throw new CarrierFrameError(`${carrier}: frame has no string "${key}": ${quote(text)}`);
  return { name, frame };
}

/** Validates one frame against its schema; the error names the first offending field and what was expected. */
export function validate<T>(carrier: string, name: string, schema: z.ZodType<T>, frame: unknown): T {
  const result = schema.safeParse(frame);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.join('.') : '(frame)';
  throw new CarrierFrameError(`${carrier}: "${name}" frame has an invalid ${path}: ${issue.message}`);
}

export function unknownEvent(carrier: string, name: string): CarrierFrameError {
  return new CarrierFrameError(`${carrier}: unknown event ${quote(JSON.stringify(name))}`);
}

/**
 * Base64 → bytes, refusing anything that is not base64. Node's decoder silently skips characters it does not
 * know and stops at a misplaced '=', which would turn a corrupted frame into shorter, shifted audio. Valid
 * base64 of length L with p padding characters decodes to exactly 3L/4 − p bytes and anything skipped makes
 * it shorter: a check that costs nothing per frame, unlike a regular expression over every payload.
 * (The URL-safe alphabet's '-' and '_' decode as well and are accepted.)
 */
export function decodeBase64(carrier: string, field: string, text: string): Buffer {
  if (text.length % 4 !== 0) throw new CarrierFrameError(`${carrier}: ${field} is not valid base64 (length ${text.length} is not a multiple of 4)`);
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== (text.length / 4) * 3 - padding) throw new CarrierFrameError(`${carrier}: ${field} is not valid base64`);
  return bytes;
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Bytes of one second of audio in this format (G.711 one byte a sample, L16 two). */
export function bytesPerSecond(format: CallAudioFormat): number {
  return format.sampleRate * (format.codec === 'l16' ? 2 : 1);
}

/** Bytes of `ms` milliseconds of audio in this format: 20 ms is 160 for G.711 8 kHz, 640 for L16 16 kHz. */
export function bytesFor(format: CallAudioFormat, ms: number): number {
  return (bytesPerSecond(format) * ms) / 1000;
}

/** Any JSON value as the string a `customParameters` entry must be (strings as they are, the rest as JSON). */
export function asParameter(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function quote(text: string): string {
  return text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}…` : text;
}

/** zod pieces shared by the schemas: strings that must hold a decimal count (Twilio's and Telnyx's string numbers). */
export const decimalString = z.string().regex(/^\d+$/, 'expected a string of decimal digits');
export const digitString = z.string().regex(/^[0-9A-D*#]$/i, 'expected one DTMF digit (0-9, *, #, A-D)');
