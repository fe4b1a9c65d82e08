/**
 * Reading Kuma's JSON frames the way a strict carrier would: JSON object, exact event name, exact field
 * types, base64 that really is base64, the stream id the carrier assigned. A mismatch throws with a message
 * the simulated call logs as a protocol error.
 */
export function readJson(frame: { text: string } | { binary: Uint8Array }, carrier: string): Record<string, any> {
  if (!('text' in frame)) throw new Error(`${carrier}: Kuma sent a binary frame; this carrier takes JSON text frames`);
  const value = JSON.parse(frame.text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${carrier}: not a JSON object: ${frame.text.slice(0, 80)}`);
  return value;
}

export function expectString(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new Error(`${what} must be a string, got ${JSON.stringify(value)}`);
  return value;
}

/** Strict base64 → bytes (Node's decoder would skip junk silently). */
export function strictBase64(text: unknown, what: string): Uint8Array {
  const s = expectString(text, what);
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) throw new Error(`${what} is not base64`);
  return new Uint8Array(Buffer.from(s, 'base64'));
}

export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what} must be ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** The object's keys must be exactly these (a carrier may reject or misread extra fields). */
export function expectKeys(obj: Record<string, unknown>, keys: string[], what: string): void {
  const actual = Object.keys(obj).sort();
  const wanted = [...keys].sort();
  if (actual.join(',') !== wanted.join(',')) throw new Error(`${what} must have exactly the fields ${wanted.join(', ')}; got ${actual.join(', ')}`);
}
