/** Reads a JSON request body within a size limit, with the primary surface's errors (400, 413, 415). */
import { ApiError } from '../api/errors.js';

export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return true; // curl -d without -H still means JSON on these endpoints
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json') || type === 'text/plain';
}

export async function readJsonBody(contentType: string | undefined, chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<unknown> {
  if (!isJsonContentType(contentType)) {
    throw new ApiError('unsupported_content_type', `Unsupported Content-Type '${contentType}': this endpoint expects application/json.`);
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      throw new ApiError('request_too_large', `The request body is larger than the limit of ${maxBytes} bytes.`);
    }
    parts.push(chunk);
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (text.trim() === '') {
    throw new ApiError('invalid_json', 'The request body is empty; this endpoint expects a JSON object.');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    // JSON.parse's message names the position, which helps the caller and reveals nothing of ours.
    throw new ApiError('invalid_json', `We could not parse the JSON body of your request (${(err as Error).message}).`);
  }
}
