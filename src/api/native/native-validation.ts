/**
 * Validation on the native surface (/v1, /v2, /api). Its clients (the Djelia JS, Node and Python SDKs) were
 * written against a FastAPI service: a request that fails validation answers 422 with a `detail` array of
 * every problem found, each `{loc, msg, type, input}` worded as pydantic words it (PROTOCOLS §4). This turns
 * zod's issues into those entries, so each route keeps one zod schema and gets the native shape for free.
 */
import type { ZodType, core } from 'zod';
import { ApiError, type NativeDetailEntry } from '../errors.js';
import { valueAt } from '../validation.js';

/** Where the value came from: the first element of every entry's `loc`. */
export type NativeLocation = 'body' | 'query' | 'path';

/** Parses `value` with `schema`, or throws a 422 whose `detail` lists every problem (not only the first). */
export function parseNative<T>(schema: ZodType<T>, value: unknown, location: NativeLocation): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw nativeValidationError(result.error.issues.map((issue) => issueToEntry(asIntegerIssue(schema, issue), value, location)));
}

/**
 * zod reports a string given for `z.int()` as "expected number"; pydantic says `int_parsing` for it. The
 * field's own schema (looked up along the issue's path, through optional/nullable/default wrappers) tells.
 */
function asIntegerIssue(schema: ZodType, issue: core.$ZodIssue): core.$ZodIssue {
  if (issue.code !== 'invalid_type' || issue.expected !== 'number') return issue;
  let current: any = schema;
  for (const key of issue.path) {
    current = unwrap(current)?._zod?.def?.shape?.[key as string];
    if (!current) return issue;
  }
  return /int/.test(String(unwrap(current)?._zod?.def?.format ?? '')) ? { ...issue, expected: 'int' } : issue;
}

function unwrap(schema: any): any {
  let current = schema;
  while (current?._zod?.def?.innerType) current = current._zod.def.innerType;
  return current;
}

/** A 422 carrying `entries` as its `detail`; the message (for logs) names the first. */
export function nativeValidationError(entries: NativeDetailEntry[]): ApiError {
  const first = entries[0];
  const message = first ? `${first.loc.join('.')}: ${first.msg}` : 'Validation failed';
  return new ApiError('validation_failed', message, { detail: entries });
}

/** The entry for a required field that is absent (e.g. an upload form without `file`). */
export function missingEntry(location: NativeLocation, field: string): NativeDetailEntry {
  return { loc: [location, field], msg: 'Field required', type: 'missing', input: null };
}

/** The entry for a body that is not JSON at all, as FastAPI reports it. */
export function jsonInvalidEntry(position: number): NativeDetailEntry {
  return { loc: ['body', position], msg: 'JSON decode error', type: 'json_invalid', input: {} };
}

export function issueToEntry(issue: core.$ZodIssue, value: unknown, location: NativeLocation): NativeDetailEntry {
  const path = issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part));
  const loc: (string | number)[] = [location, ...path];
  const input = valueAt(value, issue.path);
  if (input === undefined && issue.path.length > 0) return { loc, msg: 'Field required', type: 'missing', input: null };
  const { msg, type } = describe(issue, input);
  return { loc, msg, type, input: input ?? null };
}

function describe(issue: core.$ZodIssue, input: unknown): { msg: string; type: string } {
  switch (issue.code) {
    case 'invalid_type':
      return describeType(issue.expected, input);
    case 'too_small':
      if (issue.origin === 'string')
        return { msg: `String should have at least ${String(issue.minimum)} character${plural(issue.minimum)}`, type: 'string_too_short' };
      if (issue.origin === 'number') {
        return issue.inclusive
          ? { msg: `Input should be greater than or equal to ${String(issue.minimum)}`, type: 'greater_than_equal' }
          : { msg: `Input should be greater than ${String(issue.minimum)}`, type: 'greater_than' };
      }
      return { msg: issue.message, type: 'too_short' };
    case 'too_big':
      if (issue.origin === 'string')
        return { msg: `String should have at most ${String(issue.maximum)} character${plural(issue.maximum)}`, type: 'string_too_long' };
      if (issue.origin === 'number') {
        return issue.inclusive
          ? { msg: `Input should be less than or equal to ${String(issue.maximum)}`, type: 'less_than_equal' }
          : { msg: `Input should be less than ${String(issue.maximum)}`, type: 'less_than' };
      }
      return { msg: issue.message, type: 'too_long' };
    case 'invalid_value':
      return { msg: `Input should be ${listValues(issue.values)}`, type: 'enum' };
    default:
      return { msg: issue.message, type: 'value_error' };
  }
}

function describeType(expected: string, input: unknown): { msg: string; type: string } {
  switch (expected) {
    case 'string':
      return { msg: 'Input should be a valid string', type: 'string_type' };
    case 'int':
      return typeof input === 'string'
        ? { msg: 'Input should be a valid integer, unable to parse string as an integer', type: 'int_parsing' }
        : typeof input === 'number'
          ? { msg: 'Input should be a valid integer, got a number with a fractional part', type: 'int_from_float' }
          : { msg: 'Input should be a valid integer', type: 'int_type' };
    case 'number':
      return typeof input === 'string'
        ? { msg: 'Input should be a valid number, unable to parse string as a number', type: 'float_parsing' }
        : { msg: 'Input should be a valid number', type: 'float_type' };
    case 'boolean':
      return { msg: 'Input should be a valid boolean, unable to interpret input', type: 'bool_parsing' };
    case 'object':
      return { msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' };
    case 'array':
      return { msg: 'Input should be a valid list', type: 'list_type' };
    default:
      return { msg: `Input should be a valid ${expected}`, type: `${expected}_type` };
  }
}

function listValues(values: readonly unknown[]): string {
  const quoted = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

function plural(n: unknown): string {
  return Number(n) === 1 ? '' : 's';
}
