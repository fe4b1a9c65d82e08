/**
 * The messages between the encoder pool (main thread) and its workers. Every request carries the stream id
 * and a sequence number; the worker answers each request exactly once, in the order it received that
 * stream's requests. Errors cross the boundary as plain data (class identity does not survive structured
 * cloning); the pool rebuilds them with the same name and message.
 */
import type { EncodingVariant, SpeechFormat } from '../types.js';

export interface WorkerData {
  /** Formats to load before answering `ready`. */
  warmFormats: readonly SpeechFormat[];
}

export type PoolRequest =
  | { type: 'open'; stream: number; seq: number; format: SpeechFormat; inputRate: number; variant?: EncodingVariant }
  | { type: 'push'; stream: number; seq: number; samples: Float32Array }
  | { type: 'flush'; stream: number; seq: number }
  /** Frees the stream's encoder; not answered (the pool forgets the stream when it sends this). */
  | { type: 'close'; stream: number }
  /** Test and metrics aid: how many encoders the worker holds. */
  | { type: 'stats'; seq: number };

export interface ErrorData {
  name: string;
  message: string;
}

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'done'; stream: number; seq: number; bytes: Uint8Array }
  | { type: 'failed'; stream: number; seq: number; error: ErrorData }
  | { type: 'stats'; seq: number; openEncoders: number };

export function errorData(error: unknown): ErrorData {
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message };
}

/** Rebuilds an error that crossed the thread boundary (TypeError and RangeError keep their class). */
export function reviveError(data: ErrorData): Error {
  const error = data.name === 'TypeError' ? new TypeError(data.message) : data.name === 'RangeError' ? new RangeError(data.message) : new Error(data.message);
  if (error.name !== data.name) error.name = data.name;
  return error;
}

/**
 * A view of bytes this thread owns, ready to post: its buffer is transferred when the view spans all of it;
 * a view into a bigger buffer (which cloning would copy whole) is first copied into a buffer of its own.
 * Never use it on a caller's array: transferring detaches it.
 */
export function transferable<T extends Float32Array | Uint8Array>(view: T): { value: T; transfer: ArrayBuffer[] } {
  const buffer = view.buffer;
  if (buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === buffer.byteLength) return { value: view, transfer: [buffer] };
  return copyForTransfer(view);
}

/** A copy of a caller's view in a buffer of its own, to transfer (the caller keeps its array intact). */
export function copyForTransfer<T extends Float32Array | Uint8Array>(view: T): { value: T; transfer: ArrayBuffer[] } {
  const copy = view.slice() as T;
  return { value: copy, transfer: [copy.buffer as ArrayBuffer] };
}
