/**
 * zod at the boundary: parses a request value and turns the first problem into a 400 envelope whose
 * `param` names the offending field (dotted path, `messages.0.content`) and whose message says what is
 * wrong with it. A missing field reads `<param>: Field required`, as the real service words it.
 */
import type { ZodType, core } from 'zod';
import { ApiError } from './errors.js';

export function parseRequest<T>(schema: ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw issueToError(result.error.issues[0]!, value);
}

/** `value` is the input that was parsed: a field absent from it is reported as required, not as invalid. */
export function issueToError(issue: core.$ZodIssue, value: unknown): ApiError {
  const param = issue.path.length ? issue.path.map(String).join('.') : null;
  // Whatever zod calls it (invalid_type, or invalid_value for an enum), an absent field is a missing one.
  const missing = issue.code !== 'custom' && issue.path.length > 0 && valueAt(value, issue.path) === undefined;
  if (missing) return new ApiError('missing_required_parameter', `${param ?? 'body'}: Field required`, { param });
  return new ApiError('invalid_value', `${param ? `${param}: ` : ''}${issue.message}`, { param });
}

/** The value at `path` inside a parsed request value; undefined where the path leads nowhere. */
export function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}
