/**
 * Streaming multipart/form-data parser for the upload endpoints (transcriptions, translations).
 * busboy does the MIME parsing; this module feeds it the body one chunk at a time (never pulling the
 * next chunk before busboy has taken the last, so the transport can pause the socket), enforces our
 * limits, keeps small files in memory and spills big ones to temp files, and makes sure every way of
 * failing — malformed body, limit, abort, disk error — settles the promise and removes temp files.
 *
 * The body's chunks must not be reused by the producer once yielded: busboy hands out slices of them.
 */
import busboy from 'busboy';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  assignField,
  checkMultipartContentType,
  closeStream,
  fromBusboyError,
  invalidMultipart,
  quote,
  readTextPart,
  removeAll,
  setOwn,
  storeFilePart,
  toBuffer,
  uploadedFile,
  type PartOwner,
} from './multipart-fields.js';

import type { FieldValue, MultipartForm, UploadedFile } from '../api/uploads.js';

// The form's shape belongs to the API layer (handlers consume it); it is re-exported here for convenience.
export type { FieldValue, MultipartForm, UploadedFile };

export interface MultipartLimits {
  /** Total bytes of one file part; above → 413 audio_too_large with param = the field name. */
  maxFileBytes: number;
  /** One text field's size; above → 400 invalid_multipart. */
  maxFieldBytes: number;
  /** Number of text fields; above → 400 invalid_multipart. */
  maxFields: number;
  /** Number of file parts; above → 400 invalid_multipart. */
  maxFiles: number;
  /** A file part bigger than this is written to a temp file in tmpDir instead of memory. */
  spillThresholdBytes: number;
  tmpDir: string;
}

const noop = (): void => {};
/**
 * Bytes parsed before the loop yields to the event loop. Queued chunks are taken as microtasks, so without
 * a yield a full body queue (1 MiB) is parsed in one go: ≈ 30 ms here with four uploads arriving, long
 * enough for every other request to feel (issue P12 point 13).
 */
const YIELD_EVERY_BYTES = 256 * 1024;
const nextMacrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Parses a multipart/form-data body. Rejects with ApiError (400 invalid_multipart, 413 audio_too_large,
 * 415 unsupported_content_type), with the signal's reason on abort, or with the Node error of a failed
 * temp-file write (a server fault, for the caller to log and turn into a 500).
 */
export async function parseMultipart(
  contentType: string,
  body: AsyncIterable<Uint8Array>,
  limits: MultipartLimits,
  signal?: AbortSignal,
): Promise<MultipartForm> {
  signal?.throwIfAborted();
  checkMultipartContentType(contentType);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      // busboy decodes filename/name parameters as latin1 by default; every client we serve sends UTF-8.
      defParamCharset: 'utf8',
      // busboy truncates silently at fieldSize and flags it; one byte of slack lets us tell "exactly at
      // the limit" (fine) from "over it" (rejected) while still bounding what it buffers.
      limits: { fieldSize: limits.maxFieldBytes + 1 },
    });
  } catch (err) {
    throw fromBusboyError(err);
  }
  return new MultipartUpload(parser, limits, signal).run(body);
}

class MultipartUpload implements PartOwner {
  private readonly fields: Record<string, FieldValue> = {};
  private readonly files: Record<string, UploadedFile> = {};
  private readonly claimed = new Set<string>();
  private fieldCount = 0;
  private fileCount = 0;
  private readonly tempPaths: string[] = [];
  private readonly tempStreams: WriteStream[] = [];
  private readonly partStreams = new Set<Readable>();
  /** One per part busboy streams (files, octet-stream text): settles once its content is stored. */
  private readonly pending: Promise<void>[] = [];
  failed = false;
  private error: unknown;
  /** Rejects the wait run() is in, so nothing waits on a dead parser (one wait at a time). */
  private interruptWait: ((err: unknown) => void) | null = null;

  constructor(
    private readonly bb: busboy.Busboy,
    private readonly limits: MultipartLimits,
    private readonly signal: AbortSignal | undefined,
  ) {
    bb.on('field', (name, value, info) => this.onField(name, value, info));
    bb.on('file', (name, stream, info) => this.onFile(name, stream, info));
    // Kept for the parser's whole life: busboy can emit 'error' more than once (e.g. a malformed header,
    // then the end-of-form check), and an 'error' with no listener would be an uncaught exception.
    bb.on('error', (err) => this.fail(fromBusboyError(err)));
  }

  async run(body: AsyncIterable<Uint8Array>): Promise<MultipartForm> {
    const onAbort = (): void => this.fail(this.signal?.reason ?? new Error('The upload was aborted.'));
    this.signal?.addEventListener('abort', onAbort, { once: true });
    const it = body[Symbol.asyncIterator]();
    let sinceYield = 0;
    try {
      for (;;) {
        const next = await this.race(it.next());
        if (next.done) break;
        if (next.value.byteLength === 0) continue;
        await this.race(this.write(toBuffer(next.value)));
        sinceYield += next.value.byteLength;
        if (sinceYield >= YIELD_EVERY_BYTES) {
          sinceYield = 0;
          await this.race(nextMacrotask());
        }
      }
      // 'finish' comes only on success (end's callback would also fire on error); a missing closing
      // boundary is an 'error' from end(), which interrupts the wait.
      await this.race(new Promise<void>((resolve) => this.bb.once('finish', resolve).end()));
      await this.race(Promise.all(this.pending));
      if (this.failed) throw this.error;
      return this.form();
    } catch (err) {
      this.fail(err);
      // Let the producer release the socket; its own outcome no longer matters to us.
      Promise.resolve()
        .then(() => it.return?.())
        .catch(noop);
      await this.cleanup();
      throw this.error;
    } finally {
      this.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Waits for `promise` unless the upload fails first. Not Promise.race against one long-lived failure
   * promise: each race would leave a reaction on it until the parse ends, one per chunk — a body sent in
   * 1-byte chunks would grow memory by far more than its own size.
   */
  private race<T>(promise: Promise<T>): Promise<T> {
    if (this.failed) return Promise.reject(this.error);
    return new Promise<T>((resolve, reject) => {
      this.interruptWait = reject;
      promise.then(resolve, reject).finally(() => {
        if (this.interruptWait === reject) this.interruptWait = null;
      });
    });
  }

  /**
   * Resolves when busboy has processed the chunk — its callback is held back while a file stream it
   * feeds is paused, which is what carries a slow temp-file write back to the socket.
   */
  private write(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      try {
        this.bb.write(chunk, (err) => (err ? reject(fromBusboyError(err)) : resolve()));
      } catch (err) {
        reject(fromBusboyError(err));
      }
    });
  }

  fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.error = err;
    this.interruptWait?.(err);
    this.interruptWait = null;
    for (const ws of this.tempStreams) ws.destroy();
    // Often called from inside busboy's own write (a 'data' or 'field' handler). busboy copes, but
    // finishes the chunk in hand and may still emit events for it: every handler checks `failed`.
    this.bb.destroy();
  }

  private async cleanup(): Promise<void> {
    this.bb.destroy();
    for (const stream of this.partStreams) stream.destroy();
    await Promise.all(this.tempStreams.map(closeStream));
    await removeAll(this.tempPaths).catch(noop);
  }

  private form(): MultipartForm {
    const paths = [...this.tempPaths];
    let disposing: Promise<void> | null = null;
    return {
      fields: this.fields,
      files: this.files,
      dispose: () => (disposing ??= removeAll(paths)),
    };
  }

  /** Counts a text field against maxFields; false (after failing) when it must not be stored. */
  private admitField(name: string | undefined): name is string {
    if (!name) {
      this.fail(invalidMultipart('A part of the multipart body has no name in its Content-Disposition.'));
      return false;
    }
    if (++this.fieldCount > this.limits.maxFields) {
      this.fail(invalidMultipart(`The multipart body has more than ${this.limits.maxFields} fields.`));
      return false;
    }
    return true;
  }

  private onField(name: string, value: string | undefined, info: busboy.FieldInfo): void {
    if (this.failed || !this.admitField(name)) return;
    if (info.valueTruncated) {
      return this.fail(invalidMultipart(`The field ${quote(name)} is larger than ${this.limits.maxFieldBytes} bytes.`, name));
    }
    // busboy yields undefined for a charset TextDecoder does not know.
    if (typeof value !== 'string') {
      return this.fail(invalidMultipart(`The field ${quote(name)} declares an unsupported charset.`, name));
    }
    assignField(this.fields, name, value);
  }

  private onFile(name: string, stream: Readable, info: busboy.FileInfo): void {
    // busboy destroys an unfinished part's stream with an error of its own; the parser's 'error'
    // already reports the cause, and without a listener this one would be thrown.
    stream.on('error', noop);
    this.partStreams.add(stream);
    stream.once('close', () => this.partStreams.delete(stream));
    if (this.failed) {
      stream.resume();
      return;
    }
    // busboy treats any application/octet-stream part as a file; ours are files only with a filename.
    if (info.filename === undefined) return this.receiveTextPart(name, stream);
    if (!name) {
      stream.resume();
      return this.fail(invalidMultipart('A file part of the multipart body has no name in its Content-Disposition.'));
    }
    if (++this.fileCount > this.limits.maxFiles) {
      stream.resume();
      return this.fail(invalidMultipart(`The multipart body has more than ${this.limits.maxFiles} files.`, name));
    }
    // Only the first file per name is kept; later ones are still read (and size-checked) and dropped.
    const keep = !this.claimed.has(name);
    this.claimed.add(name);
    this.receiveFile(name, stream, info, keep);
  }

  private receiveTextPart(name: string, stream: Readable): void {
    if (!this.admitField(name)) {
      stream.resume();
      return;
    }
    const stored = readTextPart(this, stream, name, this.limits.maxFieldBytes).then((text) => {
      if (text !== null && !this.failed) assignField(this.fields, name, text);
    });
    this.pending.push(stored);
  }

  private receiveFile(name: string, stream: Readable, info: busboy.FileInfo, keep: boolean): void {
    const { maxFileBytes, spillThresholdBytes } = this.limits;
    const stored = storeFilePart(this, stream, name, { maxFileBytes, spillThresholdBytes, keep }).then((file) => {
      if (file !== null && keep && !this.failed) setOwn(this.files, name, uploadedFile(name, info, file));
    });
    this.pending.push(stored);
  }

  openTemp(): { ws: WriteStream; path: string } {
    const path = join(this.limits.tmpDir, `kuma-upload-${randomBytes(12).toString('hex')}`);
    // 'wx': never follow or reuse something already at that name; 0o600: uploads are private.
    const ws = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    this.tempPaths.push(path);
    this.tempStreams.push(ws);
    ws.on('error', (err) => this.fail(err));
    return { ws, path };
  }
}
