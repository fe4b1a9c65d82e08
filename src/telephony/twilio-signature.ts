/**
 * Twilio's request signature (`X-Twilio-Signature`), checked with the operator's Twilio auth token
 * (KUMA_TWILIO_AUTH_TOKEN): base64(HMAC-SHA1(auth token, URL + each POST parameter as name + value, names
 * sorted)). A Media Streams WebSocket upgrade has no form body, so it is signed over the URL alone. Twilio may
 * have signed the URL with or without the scheme's standard port (its own helper libraries try both), so both
 * spellings are accepted; the path and query are used exactly as received, never re-encoded.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Form parameters: a record (a repeated name as an array of values) or URLSearchParams. */
export type TwilioParams = Record<string, string | readonly string[]> | URLSearchParams;

const STANDARD_PORTS: Record<string, string> = { https: '443', wss: '443', http: '80', ws: '80' };

/** name + value for every parameter, names in code-unit order; a repeated name's values sorted too. */
function paramsText(params: TwilioParams | undefined): string {
  if (!params) return '';
  const grouped = new Map<string, string[]>();
  const entries =
    params instanceof URLSearchParams ? [...params] : Object.entries(params).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : v.map((x) => [k, x])));
  for (const [name, value] of entries) grouped.set(name!, [...(grouped.get(name!) ?? []), value!]);
  let text = '';
  for (const name of [...grouped.keys()].sort()) for (const value of grouped.get(name)!.sort()) text += name + value;
  return text;
}

export function twilioSignature(authToken: string, url: string, params?: TwilioParams): string {
  return createHmac('sha1', authToken)
    .update(url + paramsText(params), 'utf8')
    .digest('base64');
}

/** The URL as given, and with its standard port added or removed (an explicit non-standard port stays). */
function urlSpellings(url: string): string[] {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/is.exec(url);
  const standard = m ? STANDARD_PORTS[m[1]!.toLowerCase()] : undefined;
  if (!m || !standard) return [url];
  const [, scheme, authority, rest] = m;
  const port = /:(\d*)$/.exec(authority!.replace(/^.*@/, '').replace(/^\[[^\]]*\]/, ''));
  if (!port) return [url, `${scheme}://${authority}:${standard}${rest}`];
  if (port[1] === standard) return [url, `${scheme}://${authority!.slice(0, -port[0].length)}${rest}`];
  return [url];
}

/**
 * Whether `signature` is Twilio's for this URL (the full URL Twilio requested, query included) and form
 * parameters. False for a missing token or signature. Comparisons take the same time whatever matches.
 */
export function verifyTwilioSignature(authToken: string, signature: string | undefined, url: string, params?: TwilioParams): boolean {
  if (!authToken || !signature) return false;
  const presented = Buffer.from(signature, 'utf8');
  let valid = false;
  for (const spelling of urlSpellings(url)) {
    const expected = Buffer.from(twilioSignature(authToken, spelling, params), 'utf8');
    // Every spelling is compared (no early return), so timing says nothing about which one matched.
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) valid = true;
  }
  return valid;
}
