/**
 * The pieces of multipart parsing that do not drive busboy, kept apart from multipart.ts so each stays
 * readable: the Content-Type gate (415 vs 400), busboy's errors as `ApiError`s, folding `key[]` and
 * `key[sub]` field names into arrays and objects, and reading one part's content — a text part into a
 * string, a file part into memory or, past the spill threshold, a temp file.
 */
import { createReadStream, type WriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { FileInfo } from 'busboy';
import { ApiError } from '../api/errors.js';
import type { UploadedFile } from '../api/uploads.js';

import type { FieldValue } from '../api/uploads.js';

export type { FieldValue };

/**
 * 415 unless the media type is multipart/form-data. Parameters (boundary, charset) are left to busboy,
 * whose failures on a multipart/form-data type are the client's malformed request (400), not a wrong type.
 */
export function checkMultipartContentType(contentType: string | undefined): void {
  const mediaType = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (mediaType !== 'multipart/form-data') {
    const shown = mediaType === '' ? 'none' : `'${mediaType.slice(0, 100)}'`;
    throw new ApiError('unsupported_content_type', `Unsupported Content-Type (${shown}): this endpoint expects multipart/form-data.`);
  }
}

export function invalidMultipart(message: string, param?: string): ApiError {
  return new ApiError('invalid_multipart', message, { param: param ?? null });
}

/**
 * busboy reports every problem as a bare `Error` whose message is one of a handful of fixed strings;
 * they are rephrased for the client. Anything else it throws is still the body's fault (it only ever
 * sees client bytes), so it becomes a 400 too rather than a 500, without echoing an internal message.
 */
export function fromBusboyError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  switch (message) {
    case 'Unexpected end of form':
      return invalidMultipart('The multipart body ended before its closing boundary (truncated or malformed body).');
    case 'Unexpected end of file':
      return invalidMultipart('The multipart body ended in the middle of a file part.');
    case 'Malformed part header':
      return invalidMultipart('A part of the multipart body has a malformed header.');
    case 'Multipart: Boundary not found':
      return invalidMultipart('The multipart/form-data Content-Type has no boundary parameter.');
    case 'Malformed content type':
      return invalidMultipart('The multipart/form-data Content-Type header is malformed.');
    default:
      return invalidMultipart('The multipart body is malformed and could not be parsed.');
  }
}

/**
 * Defines an own, enumerable property. Plain assignment would let a part named `__proto__` (or
 * `__proto__[x]`) replace the object's prototype; defineProperty always creates a data property.
 */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function getOwn<T>(target: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(target, key) ? target[key] : undefined;
}

// One level only: `key[]` and `key[sub]`. Deeper names (`a[b][c]`) stay literal keys, since no client
// of ours sends them and guessing a structure would be worse than keeping what was sent.
const BRACKETED = /^([^[\]]+)\[([^[\]]*)\]$/;

/**
 * Stores one text field. `key[]` appends to an array under `key` (the OpenAI SDK's encoding of
 * `timestamp_granularities`), `key[sub]` sets `sub` in an object under `key`, and a plain repeated key
 * keeps its last value. When shapes clash (`a` then `a[]`), the later part wins, like a repeated key.
 */
export function assignField(fields: Record<string, FieldValue>, name: string, value: string): void {
  const match = BRACKETED.exec(name);
  if (!match) {
    setOwn(fields, name, value);
    return;
  }
  const key = match[1]!;
  const sub = match[2]!;
  const existing = getOwn(fields, key);
  if (sub === '') {
    if (Array.isArray(existing)) existing.push(value);
    else setOwn(fields, key, [value]);
    return;
  }
  if (existing !== undefined && typeof existing === 'object' && !Array.isArray(existing)) {
    setOwn(existing, sub, value);
  } else {
    const obj: Record<string, string> = {};
    setOwn(obj, sub, value);
    setOwn(fields, key, obj);
  }
}

export function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** A client-chosen name for an error message, cut short so a huge one cannot bloat the response. */
export function quote(name: string): string {
  return `'${name.length > 100 ? `${name.slice(0, 100)}…` : name}'`;
}

/** Resolves once the temp file's descriptor is released, destroying the stream if it is still open. */
export function closeStream(ws: WriteStream): Promise<void> {
  if (ws.closed) return Promise.resolve();
  return new Promise((resolve) => {
    ws.once('close', () => resolve());
    ws.destroy();
  });
}

export async function removeAll(paths: readonly string[]): Promise<void> {
  await Promise.all(paths.map((path) => rm(path, { force: true })));
}

const BLOCK_BYTES = 16 * 1024;
const SMALL_CHUNK_BYTES = 4 * 1024;

/**
 * Collects a part's content in order. Chunks under 4 KiB are copied into shared 16 KiB blocks: a Buffer
 * costs ~100 bytes of bookkeeping, so a body trickled in 1-byte chunks would otherwise take ~100 times
 * its size in memory, and the spill threshold would bound nothing. Big chunks are kept as they came.
 */
export class ChunkCollector {
  private chunks: Buffer[] = [];
  private block: Buffer | null = null;
  private used = 0;

  push(chunk: Buffer): void {
    if (chunk.length >= SMALL_CHUNK_BYTES) {
      this.seal();
      this.chunks.push(chunk);
      return;
    }
    if (this.block !== null && this.used + chunk.length > this.block.length) {
      this.chunks.push(this.block.subarray(0, this.used));
      this.block = null;
    }
    if (this.block === null) {
      this.block = Buffer.allocUnsafe(BLOCK_BYTES);
      this.used = 0;
    }
    chunk.copy(this.block, this.used);
    this.used += chunk.length;
  }

  /** Everything collected so far, in order; the collector starts empty again. */
  take(): Buffer[] {
    this.seal();
    const chunks = this.chunks;
    this.chunks = [];
    return chunks;
  }

  /** Moves the partly filled block's bytes out (copied to their exact size) and reuses the block. */
  private seal(): void {
    if (this.block !== null && this.used > 0) this.chunks.push(Buffer.from(this.block.subarray(0, this.used)));
    this.used = 0;
  }
}

/** What a part reader needs from the upload that owns it. */
export interface PartOwner {
  readonly failed: boolean;
  /** Records the first failure and stops the upload; later calls are ignored. */
  fail(err: unknown): void;
  /** Opens a new temp file, registered for cleanup. */
  openTemp(): { ws: WriteStream; path: string };
}

/**
 * Reads a part busboy took for a file (it does so for any application/octet-stream part) but that has
 * no filename, so is a text field for us. Resolves with the text, or null once the upload has failed.
 */
export function readTextPart(owner: PartOwner, stream: Readable, name: string, maxBytes: number): Promise<string | null> {
  const parts = new ChunkCollector();
  let size = 0;
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => {
      if (owner.failed) return;
      size += chunk.length;
      if (size > maxBytes) {
        owner.fail(invalidMultipart(`The field ${quote(name)} is larger than ${maxBytes} bytes.`, name));
        return;
      }
      parts.push(chunk);
    });
    stream.once('end', () => resolve(owner.failed ? null : Buffer.concat(parts.take(), size).toString('utf8')));
  });
}

export interface StoredFile {
  size: number;
  /** The content when it stayed in memory; empty when it spilled. */
  chunks: Buffer[];
  path: string | null;
}

export interface StoreOptions {
  maxFileBytes: number;
  spillThresholdBytes: number;
  /** false for a repeated file field: still read and size-checked, but nothing is kept. */
  keep: boolean;
}

/**
 * Reads one file part. Memory holds at most spillThresholdBytes plus one chunk: past that, what was
 * buffered goes to a temp file and the rest streams after it. Resolves (with the temp file closed) when
 * the part is stored, or with null once the upload has failed.
 */
export function storeFilePart(owner: PartOwner, stream: Readable, name: string, opts: StoreOptions): Promise<StoredFile | null> {
  const memory = new ChunkCollector();
  let size = 0;
  let ws: WriteStream | null = null;
  let path: string | null = null;
  let paused = false;
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => {
      if (owner.failed) return;
      size += chunk.length;
      if (size > opts.maxFileBytes) {
        const message = `The file in ${quote(name)} is larger than the limit of ${opts.maxFileBytes} bytes.`;
        owner.fail(new ApiError('audio_too_large', message, { param: name }));
        return;
      }
      if (!opts.keep) return;
      if (ws === null) {
        memory.push(chunk);
        if (size <= opts.spillThresholdBytes) return;
        ({ ws, path } = owner.openTemp());
        for (const buffered of memory.take()) ws.write(buffered);
      } else {
        ws.write(chunk);
      }
      // Pausing the part's stream makes busboy hold its write callback, which stops the body loop, which
      // stops pulling from the socket: a slow disk slows the client instead of filling our memory.
      if (ws.writableNeedDrain && !paused) {
        paused = true;
        stream.pause();
        ws.once('drain', () => {
          paused = false;
          stream.resume();
        });
      }
    });
    stream.once('end', () => {
      if (owner.failed) return resolve(null);
      if (ws === null) return resolve({ size, chunks: memory.take(), path });
      // Resolve only once the descriptor is closed, so a returned form holds no open files.
      ws.once('close', () => resolve(owner.failed ? null : { size, chunks: [], path }));
      ws.end();
    });
  });
}

export function uploadedFile(field: string, info: FileInfo, stored: StoredFile): UploadedFile {
  const { size, chunks, path } = stored;
  return {
    field,
    filename: info.filename || null,
    // busboy reports a part without Content-Type as text/plain and cannot tell the two apart; no audio
    // client sends text/plain on purpose, so both read as "untyped".
    contentType: info.mimeType === 'text/plain' ? null : info.mimeType,
    size,
    path,
    read: () => (path === null ? Promise.resolve(Buffer.concat(chunks, size)) : readFile(path)),
    stream: () => (path === null ? iterate(chunks) : createReadStream(path)),
  };
}

async function* iterate(chunks: readonly Buffer[]): AsyncIterable<Buffer> {
  yield* chunks;
}
