/**
 * Building blocks of the documented responses: JSON, text and Server-Sent Events contents, and the
 * description of each error status, derived from the one error registry so that it names the codes a
 * client can meet with that status.
 */
import { z, type ZodType } from 'zod';
import { ERROR_CODES } from '../errors.js';
import { MEDIA_TYPES } from '../media-types.js';
import type { OpenApiContent } from '../types.js';
import { ErrorEnvelopeSchema } from './common.js';

const MEANING: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid API key (on the admin API: admin key)',
  402: 'Insufficient balance',
  403: 'An API key on the admin API, which takes admin keys only',
  404: 'Unknown model, or on the admin API an unknown account or key',
  405: 'Method not served on this path',
  410: 'Retired: the route is gone since the retirement date; the Link header names its successor',
  413: 'Request body, upload or audio too large',
  415: 'Unsupported request content type',
  422: 'Format not served by this model; on the native surface, request validation failed (a `detail` array)',
  429: 'Over a rate limit of the key or its account; retry after the Retry-After delay',
  500: 'Internal error (details are logged under the request id, never sent)',
  503: 'Overloaded, model not loaded, or shutting down; retry after the Retry-After delay',
};

/** "Invalid request (codes: invalid_json, invalid_value, …)": what the envelope of this status can carry. */
export function errorDescription(status: number): string {
  const codes = Object.entries(ERROR_CODES)
    .filter(([, entry]) => entry.status === status)
    .map(([code]) => code);
  return `${MEANING[status] ?? 'Error'}${codes.length ? ` (code: ${codes.join(', ')})` : ''}`;
}

export function jsonContent(schema: ZodType, responseFormats?: readonly string[]): OpenApiContent {
  return { contentType: MEDIA_TYPES.json, schema, ...(responseFormats ? { responseFormats } : {}) };
}

export function textContent(contentType: string, responseFormats?: readonly string[]): OpenApiContent {
  return { contentType, schema: z.string(), ...(responseFormats ? { responseFormats } : {}) };
}

/**
 * A text/event-stream whose `data:` payloads are the given events. The transport ends any stream that
 * fails after it began with one error envelope, so every stream's payloads include it; `done` streams end
 * with the non-JSON sentinel `[DONE]`, documented as that exact string.
 */
export function eventStreamContent(id: string, events: ZodType[], options: { done: boolean }): OpenApiContent {
  const payloads: ZodType[] = [...events, ErrorEnvelopeSchema];
  if (options.done) payloads.push(z.literal('[DONE]'));
  const description =
    'The payload of one Server-Sent Events `data:` line: one of these JSON objects' +
    (options.done ? ', or the sentinel `[DONE]` (not JSON) that ends the stream' : '') +
    '. An `error` envelope reports a failure after the stream began; the stream ends after it.';
  return { contentType: MEDIA_TYPES.eventStream, schema: z.union(payloads as [ZodType, ZodType, ...ZodType[]]).meta({ id, description }) };
}
