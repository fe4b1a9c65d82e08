/**
 * zod → JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) for the OpenAPI document, with zod's own
 * converter. Requests are converted on their input side, so fields with defaults are optional, as a
 * client sees them; responses on their output side, so what the server always fills in is required.
 * Schemas named with `meta({id})` become shared components, referenced from every use.
 */
import { isDeepStrictEqual } from 'node:util';
import { z, type ZodType } from 'zod';

type JsonObject = Record<string, unknown>;

export class SchemaComponents {
  private readonly schemas: Record<string, unknown> = {};

  /** A request's schema: what a client may send. */
  input(schema: ZodType): unknown {
    return this.convert(schema, 'input');
  }

  /** A response's schema: what the server sends. */
  output(schema: ZodType): unknown {
    return this.convert(schema, 'output');
  }

  all(): Record<string, unknown> {
    return this.schemas;
  }

  private convert(schema: ZodType, io: 'input' | 'output'): unknown {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonObject;
    const { $schema: _dialect, $defs, id, ...root } = json;
    for (const [name, def] of Object.entries(($defs ?? {}) as JsonObject)) this.register(name, rewriteRefs(def));
    const body = rewriteRefs(root) as JsonObject;
    if (typeof id !== 'string') return body;
    this.register(id, body);
    return ref(id);
  }

  /**
   * One name, one schema: a component converted on both sides (or two schemas given one id) would
   * otherwise silently describe only one of them.
   */
  private register(name: string, body: unknown): void {
    const existing = this.schemas[name];
    if (existing !== undefined && !isDeepStrictEqual(existing, body)) {
      throw new Error(
        `OpenAPI component ${name} has two different definitions (an id used twice, or a schema used as both request and response whose sides differ)`,
      );
    }
    this.schemas[name] = body;
  }
}

function ref(name: string): JsonObject {
  return { $ref: `#/components/schemas/${name}` };
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/$defs/', '#/components/schemas/') : rewriteRefs(v);
    }
    return out;
  }
  return value;
}
