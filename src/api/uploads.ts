/**
 * What a parsed multipart/form-data upload looks like to a handler: text fields (with `key[]` arrays and
 * `key[sub]` objects already assembled) and file parts, small ones in memory and large ones spooled to disk.
 * The transport's streaming parser produces it.
 */

export type FieldValue = string | string[] | Record<string, string>;

export interface UploadedFile {
  field: string;
  /** null when the client sent an empty one. */
  filename: string | null;
  /** null when the part had no Content-Type (busboy reports that as text/plain, so text/plain is null too). */
  contentType: string | null;
  size: number;
  /** set when the part spilled to disk */
  path: string | null;
  /** whole content (from memory or the temp file) */
  read(): Promise<Buffer>;
  /** content in chunks */
  stream(): AsyncIterable<Buffer>;
}

export interface MultipartForm {
  fields: Record<string, FieldValue>;
  /** first file part per field name */
  files: Record<string, UploadedFile>;
  /** removes temp files; safe to call twice */
  dispose(): Promise<void>;
}
