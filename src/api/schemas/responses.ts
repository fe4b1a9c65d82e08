/** OpenAPI response entries for the error statuses an operation can answer with. */
import { ErrorEnvelopeSchema } from './common.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid API key',
  402: 'Insufficient balance',
  404: 'Unknown model or endpoint',
  413: 'Request or audio too large',
  415: 'Unsupported content type',
  422: 'Format not served by this model',
  503: 'Overloaded or not ready; retry after the Retry-After delay',
};

export function errorResponses(...statuses: number[]): Record<number, { description: string; schema: typeof ErrorEnvelopeSchema }> {
  return Object.fromEntries(statuses.map((s) => [s, { description: DESCRIPTIONS[s] ?? 'Error', schema: ErrorEnvelopeSchema }]));
}
