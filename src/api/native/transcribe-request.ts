/**
 * What a native transcribe request carries (SPEC §4.7): the query flag `translate_to_french` and the
 * multipart `file`, validated as the FastAPI service the Djelia SDKs were written against validated them —
 * every problem at once, query before body, in one 422 `detail` array (native-validation.ts).
 *
 * `translate_to_french` takes what pydantic takes for a bool: true/false, 1/0, yes/no, on/off, t/f, y/n, in
 * any case. An empty value and the word `null` mean null, which is the default (false): the Stainless-made
 * Djelia Node SDK types the flag `boolean | null` and writes null as `translate_to_french=` (FastAPI would
 * refuse that; refusing a value the SDK's own types allow helps nobody). Repeated, the last one counts (as
 * Starlette reads a query). Anything else is 422 `bool_parsing`.
 */
import { z } from 'zod';
import { ApiError, type NativeDetailEntry } from '../errors.js';
import type { ApiRequest } from '../types.js';
import type { MultipartForm } from '../uploads.js';
import { missingEntry, nativeValidationError, parseNative } from './native-validation.js';

const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);
const NULL_WORDS = new Set(['', 'null']);

/** A query word as a boolean, undefined for null; any other word is left as it is, for the schema to refuse. */
function boolWord(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const word = value.toLowerCase();
  if (NULL_WORDS.has(word)) return undefined;
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  return value;
}

const TranscribeQuerySchema = z.object({ translate_to_french: z.preprocess(boolWord, z.boolean().optional()) });

export interface NativeTranscribeRequest {
  translateToFrench: boolean;
  /** Holds a `file` part; the caller disposes of it. */
  form: MultipartForm;
}

/** Reads the query and the body; throws one 422 listing every problem (the form is disposed of then). */
export async function readTranscribeRequest(req: ApiRequest): Promise<NativeTranscribeRequest> {
  const problems: NativeDetailEntry[] = [];
  let translateToFrench = false;
  try {
    const flag = req.query.getAll('translate_to_french').at(-1);
    translateToFrench = parseNative(TranscribeQuerySchema, flag === undefined ? {} : { translate_to_french: flag }, 'query').translate_to_french ?? false;
  } catch (err) {
    if (!(err instanceof ApiError && err.detail)) throw err;
    problems.push(...err.detail);
  }
  const form = await readForm(req);
  const fileProblem = form ? checkFile(form) : missingEntry('body', 'file');
  if (fileProblem) problems.push(fileProblem);
  if (problems.length > 0 || !form) {
    await form?.dispose();
    throw nativeValidationError(problems);
  }
  return { translateToFrench, form };
}

/**
 * The multipart body, or null when the body is not multipart at all: FastAPI then reads an empty form and
 * reports the file as missing (422), where the primary surface answers 415. A malformed multipart body stays
 * a 400, an upload over the limit a 413 (FastAPI's and the primary surface's answers).
 */
async function readForm(req: ApiRequest): Promise<MultipartForm | null> {
  try {
    return await req.body.multipart();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unsupported_content_type') return null;
    throw err;
  }
}

/** `file` must be a file part; sent as a plain text field, FastAPI's UploadFile check refuses it in these words. */
function checkFile(form: MultipartForm): NativeDetailEntry | null {
  if (form.files.file) return null;
  const text = form.fields.file;
  if (typeof text === 'string')
    return { loc: ['body', 'file'], msg: "Value error, Expected UploadFile, received: <class 'str'>", type: 'value_error', input: text };
  return missingEntry('body', 'file');
}
