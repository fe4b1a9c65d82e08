/**
 * Static files served beside the API (Kuma Studio, src/studio): a GET or HEAD of a path that no API route
 * serves is looked up here before it becomes a 404. Assets are held in memory with their precompressed
 * forms; this file picks the representation from Accept-Encoding (br, then gzip, then identity), answers
 * 304 to a matching If-None-Match, and sets each asset's caching and security headers.
 *
 * Each representation has its own strong ETag (the identity body's hash, suffixed `-br` / `-gz`), as a
 * cache keyed on ETag alone must never be handed gzip bytes for a br request; If-None-Match matches any of
 * them (weakly, RFC 9110 §13.1.2), since they all stand for the same content.
 */

export interface StaticAsset {
  contentType: string;
  /** The identity body. */
  body: Uint8Array;
  /** Precompressed forms, present only where they are smaller than the body. */
  br?: Uint8Array;
  gzip?: Uint8Array;
  /** Strong validator of the identity body, quoted: `"<hash>"`. */
  etag: string;
  cacheControl: string;
  /** Headers of this asset alone (the page's Content-Security-Policy). */
  headers?: Record<string, string>;
}

/** Paths (as requested, `/` included) → assets. */
export type StaticSite = ReadonlyMap<string, StaticAsset>;

export interface StaticResponse {
  status: 200 | 304;
  headers: Record<string, string>;
  /** The chosen representation; for a 304 it is not sent, only its length is reported. */
  body: Uint8Array;
}

/** Headers every static response carries, whatever the asset. */
const COMMON_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  vary: 'accept-encoding',
};

type Coding = 'br' | 'gzip' | 'identity';

/** The response for `asset` to a request with these (lower-cased) headers. */
export function staticResponse(asset: StaticAsset, requestHeaders: Record<string, string>): StaticResponse {
  const accepted = acceptedCodings(requestHeaders['accept-encoding']);
  const coding: Coding = asset.br && accepted.has('br') ? 'br' : asset.gzip && accepted.has('gzip') ? 'gzip' : 'identity';
  const body = coding === 'br' ? asset.br! : coding === 'gzip' ? asset.gzip! : asset.body;
  const etag = coding === 'identity' ? asset.etag : `${asset.etag.slice(0, -1)}-${coding === 'br' ? 'br' : 'gz'}"`;
  const headers: Record<string, string> = { ...COMMON_HEADERS, ...asset.headers, 'content-type': asset.contentType, 'cache-control': asset.cacheControl, etag };
  if (coding !== 'identity') headers['content-encoding'] = coding;
  const notModified = matchesAny(requestHeaders['if-none-match'], asset.etag);
  return { status: notModified ? 304 : 200, headers, body };
}

/**
 * The codings an Accept-Encoding header allows (RFC 9110 §12.5.3): listed with q > 0, or covered by `*`
 * with q > 0 and not listed with q = 0. No header: identity only.
 */
export function acceptedCodings(header: string | undefined): Set<Coding> {
  const out = new Set<Coding>(['identity']);
  if (!header) return out;
  const listed = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.trim().split('=');
      if (key === 'q') q = Number(value);
    }
    listed.set(name, Number.isFinite(q) ? q : 0);
  }
  const star = listed.get('*');
  for (const coding of ['br', 'gzip'] as const) {
    const q = listed.get(coding) ?? (coding === 'gzip' ? listed.get('x-gzip') : undefined) ?? star ?? 0;
    if (q > 0) out.add(coding);
  }
  return out;
}

/** Whether If-None-Match names this content: `*`, or one of its representations' tags (weak comparison). */
function matchesAny(header: string | undefined, identityTag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const base = identityTag.slice(1, -1);
  for (const raw of header.split(',')) {
    const tag = raw.trim().replace(/^W\//, '');
    if (tag === `"${base}"` || tag === `"${base}-br"` || tag === `"${base}-gz"`) return true;
  }
  return false;
}
