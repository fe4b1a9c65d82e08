/**
 * The one registry of error codes (code → HTTP status and error type) and the one serializer of the
 * primary surface's envelope `{"error":{"message","type","param","code"}}`. Statuses and types follow
 * PROTOCOLS §4; everything that fails on the primary surface goes through here.
 */
import { EngineNotReadyError, EngineOverloadedError, isCapacityError } from '../engines/errors.js';
import { AudioDecodeError, DecoderBusyError, DecoderRestartedError } from '../codecs/types.js';
import { InsufficientQuotaError, InvalidAmountError } from '../billing/errors.js';
import { AdminAuthError, CredentialError } from '../auth/errors.js';
import { RateLimitedError } from '../limits/errors.js';
import { StoreUnavailableError } from '../store/store-errors.js';
import { OutboundRefusedError } from '../outbound/errors.js';
import { CallTokenError, WebhookSettingError } from '../telephony/errors.js';
import { TextTooLongError, TooMuchTextWaitingError } from '../voice/voice-session.js';

export const ERROR_CODES = {
  invalid_api_key: { status: 401, type: 'authentication_error' },
  insufficient_quota: { status: 402, type: 'insufficient_quota' },
  permission_denied: { status: 403, type: 'permission_error' },
  unknown_endpoint: { status: 404, type: 'invalid_request_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  call_not_found: { status: 404, type: 'invalid_request_error' },
  account_not_found: { status: 404, type: 'invalid_request_error' },
  key_not_found: { status: 404, type: 'invalid_request_error' },
  subject_not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_value: { status: 400, type: 'invalid_request_error' },
  missing_required_parameter: { status: 400, type: 'invalid_request_error' },
  invalid_multipart: { status: 400, type: 'invalid_request_error' },
  malformed_request: { status: 400, type: 'invalid_request_error' },
  unsupported_voice: { status: 400, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  audio_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_content_type: { status: 415, type: 'invalid_request_error' },
  invalid_request: { status: 422, type: 'invalid_request_error' },
  validation_failed: { status: 422, type: 'invalid_request_error' },
  endpoint_retired: { status: 410, type: 'invalid_request_error' },
  upgrade_required: { status: 426, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  server_error: { status: 500, type: 'api_error' },
  service_unavailable: { status: 503, type: 'api_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface ApiErrorOptions {
  param?: string | null;
  /** Extra response headers, e.g. Retry-After on 503. */
  headers?: Record<string, string>;
  /** The envelope's `type` when it is not the code's usual one (OpenAI's 429s say `requests` or `tokens`). */
  type?: string;
  /** Native surface only: the validation problems, sent as the body's `detail` array (PROTOCOLS §4). */
  detail?: NativeDetailEntry[];
}

/** One entry of a native 422 body, in the shape the Djelia SDKs parse: `{loc, msg, type, input?}`. */
export interface NativeDetailEntry {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

/** A failure meant for the client: its message is safe to show. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly detail: NativeDetailEntry[] | undefined;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = options.type ?? ERROR_CODES[code].type;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    this.detail = options.detail;
  }

  toEnvelope(): ErrorEnvelope {
    // PROTOCOLS §4 lists 402 with no code; SPEC's issue text names insufficient_quota, so it is sent as both.
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  /**
   * The body on the native surface (/v1, /v2, /api): `{detail: [...]}` for validation problems, `{detail:
   * "message"}` for the rest, as the Djelia SDKs read them. A retired route answers the primary envelope
   * (its code is what a migrating client looks for) with the message as `detail` too.
   */
  toNativeBody(): unknown {
    if (this.detail) return { detail: this.detail };
    if (this.code === 'endpoint_retired') return { ...this.toEnvelope(), detail: this.message };
    return { detail: this.message };
  }
}

/**
 * Turns anything thrown into an ApiError. Engine, billing and audio errors map to their statuses; unknown errors
 * become a 500 whose message reveals nothing of the internals (the original is logged, never sent).
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof EngineOverloadedError) {
    return new ApiError('service_unavailable', `The model ${err.modelId} is at capacity. Please retry after ${err.retryAfterSeconds} s.`, {
      headers: { 'retry-after': String(err.retryAfterSeconds) },
    });
  }
  if (err instanceof EngineNotReadyError) {
    return new ApiError('service_unavailable', `The model ${err.modelId} is still loading. Please retry shortly.`, { headers: { 'retry-after': '5' } });
  }
  if (err instanceof DecoderBusyError) {
    return new ApiError('service_unavailable', `The server is decoding as many uploads as it can. Please retry after ${err.retryAfterSeconds} s.`, {
      headers: { 'retry-after': String(err.retryAfterSeconds) },
    });
  }
  if (err instanceof DecoderRestartedError) return new ApiError('service_unavailable', err.message, { headers: { 'retry-after': '1' } });
  // The ledger's database is down or restarting: worth a retry, unlike the 500 of a bug.
  if (err instanceof StoreUnavailableError)
    return new ApiError('service_unavailable', 'The account database is unavailable. Try again shortly.', { headers: { 'retry-after': '2' } });
  if (err instanceof InsufficientQuotaError) return new ApiError('insufficient_quota', err.message);
  if (err instanceof InvalidAmountError) return new ApiError('invalid_value', err.message);
  if (err instanceof CredentialError) return new ApiError('invalid_api_key', err.message);
  // The speech sockets' text limits: the piece is refused whole and may be sent again.
  if (err instanceof TextTooLongError)
    return new ApiError('invalid_value', `text: at most ${err.limit} characters per message (got ${err.characters}); send the text in smaller pieces.`, {
      param: 'text',
    });
  if (err instanceof TooMuchTextWaitingError) {
    return new ApiError(
      'invalid_value',
      `text: ${err.waiting} characters are waiting to be spoken and at most ${err.limit} may wait; send this piece again once more audio has arrived.`,
      { param: 'text' },
    );
  }
  if (err instanceof AdminAuthError) return new ApiError(err.reason === 'api_key' ? 'permission_denied' : 'invalid_api_key', err.message);
  if (err instanceof RateLimitedError) {
    // OpenAI's 429 envelope names the exhausted budget in `type`: `requests` or `tokens`.
    return new ApiError('rate_limit_exceeded', err.message, {
      type: err.kind === 'tokens' ? 'tokens' : 'requests',
      headers: { ...err.headers, 'retry-after': String(err.retryAfterSeconds) },
    });
  }
  if (err instanceof CallTokenError) return new ApiError('invalid_api_key', err.message, { param: 'token' });
  if (err instanceof OutboundRefusedError) return new ApiError('invalid_value', err.message);
  if (err instanceof WebhookSettingError) return new ApiError('invalid_value', err.message, { param: err.reason === 'invalid_url' ? 'url' : 'keep_secret' });
  if (err instanceof AudioDecodeError) {
    if (err.kind === 'too_long') return new ApiError('audio_too_large', err.message, { param: 'file' });
    return new ApiError('invalid_value', err.message, { param: 'file' });
  }
  return new ApiError('server_error', 'The server had an error while processing your request.');
}

/**
 * A refusal for lack of capacity — a model at capacity or still loading, every decoder busy — that a retry
 * can get past (503 with Retry-After, close 1013): logged at warn, never at error.
 */
export function isCapacityRefusal(err: unknown): boolean {
  return isCapacityError(err) || err instanceof DecoderBusyError;
}
