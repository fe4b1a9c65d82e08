/**
 * A native route's JSON body. The transport answers a body that is not JSON with the primary surface's
 * 400 invalid_json; the native clients were written against FastAPI, which answers 422 with a detail
 * entry (`json_invalid` at the parse position, or `missing` for an empty body), so that is what they get.
 * A body of another Content-Type is what FastAPI reads as raw bytes for a model: 422
 * `model_attributes_type` at ["body"], never a 415. Size (413) refusals pass through as `{detail}`.
 */
import { ApiError } from '../errors.js';
import type { ApiRequest } from '../types.js';
import { jsonInvalidEntry, nativeValidationError } from './native-validation.js';

export async function readNativeJson(req: ApiRequest): Promise<unknown> {
  try {
    return await req.body.json();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'unsupported_content_type') {
      throw nativeValidationError([
        { loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type', input: null },
      ]);
    }
    if (!(err instanceof ApiError) || err.code !== 'invalid_json') throw err;
    if (/empty/.test(err.message)) throw nativeValidationError([{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }]);
    // JSON.parse names the position ("... at position 12"); FastAPI's entry carries it in `loc`.
    const position = Number(/position (\d+)/.exec(err.message)?.[1] ?? 0);
    throw nativeValidationError([jsonInvalidEntry(position)]);
  }
}
