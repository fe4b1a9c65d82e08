/**
 * The body the Python SDK sends: requests' `json=` serializes with json.dumps' defaults — `", "` and `": "`
 * separators and every non-ASCII character escaped as \uXXXX (ensure_ascii). Replayed byte for byte; the
 * `floats` keys are written as Python writes a float (1.0, not 1: pydantic's `float` fields dump so).
 */
export function pythonJson(value: unknown, floats: string[] = []): string {
  return JSON.stringify(value, (key, v) => (floats.includes(key) && Number.isInteger(v) ? `@float@${v}` : v), 1)
    .replace(/"@float@(-?\d+)"/g, '$1.0')
    .replace(/\n\s*/g, ' ')
    .replace(/\[ /g, '[')
    .replace(/ \]/g, ']')
    .replace(/\{ /g, '{')
    .replace(/ \}/g, '}')
    .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
