/**
 * Checks real HTTP exchanges against the server's own OpenAPI 3.1 document: the operation must exist
 * under the prefix used, the status must be documented for it, the Content-Type must be one of that
 * status's media types, and JSON bodies, text bodies and every SSE `data:` payload must validate against
 * the documented schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses). Records what was seen so that a
 * test can assert every documented response was exercised.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { sseData } from './sse.js';

// ajv-formats is CommonJS: under NodeNext its default import is module.exports, which carries the plugin as .default.
const addFormats = ajvFormats.default;

type Json = Record<string, any>;
const DOC_ID = 'https://kuma.invalid/openapi.json';
/** Keys of an OpenAPI document (and of its objects) that are not JSON Schema keywords. */
const OPENAPI_KEYWORDS = ['openapi', 'info', 'servers', 'paths', 'components', 'security', 'tags', 'webhooks', 'x-response-formats'];

export interface Operation {
  method: string;
  /** Path template without prefix, as the document keys it: `/models/{model}`. */
  path: string;
  servers: string[];
  op: Json;
}

export interface Exchange {
  method: string;
  /** Prefix + path as requested. */
  path: string;
  /** The `response_format` asked for, when the response must be of a media type that names it. */
  responseFormat?: string;
}

export interface Checked {
  status: number;
  contentType: string;
  /** The document's media type key the response matched. */
  mediaType: string;
  /** The parsed JSON body, the text, the SSE payloads, or the raw bytes. */
  body: unknown;
}

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  private readonly validators = new Map<string, ValidateFunction>();
  /** `METHOD server+path` → the `status mediaType` pairs seen. */
  readonly seen = new Map<string, Set<string>>();

  constructor(readonly doc: Json) {
    addFormats(this.ajv);
    this.ajv.addFormat('binary', true); // OpenAPI's marker for a file part; any string.
    this.ajv.addVocabulary(OPENAPI_KEYWORDS);
    this.ajv.addSchema({ ...doc, $id: DOC_ID });
  }

  operations(): Operation[] {
    const out: Operation[] = [];
    for (const [path, item] of Object.entries<Json>(this.doc.paths)) {
      const servers = ((item.servers ?? this.doc.servers) as Json[]).map((s) => (s.url === '/' ? '' : String(s.url)));
      for (const [method, op] of Object.entries<Json>(item)) if (method !== 'servers') out.push({ method: method.toUpperCase(), path, servers, op });
    }
    return out;
  }

  /** Every `METHOD /full/:pattern` the document describes, in the route table's notation. */
  routeTable(): string[] {
    return this.operations().flatMap((o) => o.servers.map((s) => `${o.method} ${s}${o.path.replace(/\{([^}]+)\}/g, ':$1')}`));
  }

  find(method: string, fullPath: string): { operation: Operation; key: string } | undefined {
    for (const operation of this.operations()) {
      if (operation.method !== method) continue;
      for (const server of operation.servers) {
        const pattern = new RegExp(
          `^${escape(server)}${operation.path
            .split(/\{[^}]+\}/)
            .map(escape)
            .join('[^/]+')}$`,
        );
        if (pattern.test(fullPath)) return { operation, key: `${method} ${server}${operation.path}` };
      }
    }
    return undefined;
  }

  /** Validates one response against the document; throws an Error that says what differs. */
  async check(exchange: Exchange, res: Response): Promise<Checked> {
    const where = `${exchange.method} ${exchange.path} → ${res.status}`;
    const found = this.find(exchange.method, exchange.path);
    if (!found) throw new Error(`${where}: no operation in the document`);
    if (!res.headers.get('x-request-id')) throw new Error(`${where}: no x-request-id`);
    const response = found.operation.op.responses[String(res.status)] as Json | undefined;
    if (!response) throw new Error(`${where}: status not documented (documented: ${Object.keys(found.operation.op.responses).join(', ')})`);
    const contentType = res.headers.get('content-type') ?? '';
    const mediaType = matchMediaType(contentType, Object.keys(response.content ?? {}));
    if (!mediaType) throw new Error(`${where}: Content-Type ${contentType} is not documented (documented: ${Object.keys(response.content ?? {}).join(' | ')})`);
    const media = response.content[mediaType] as Json;
    const formats = media['x-response-formats'] as string[] | undefined;
    if (exchange.responseFormat && formats && !formats.includes(exchange.responseFormat)) {
      throw new Error(`${where}: response_format ${exchange.responseFormat} came as ${mediaType}, documented for ${formats.join(', ')}`);
    }
    const body = await this.checkBody(where, res, mediaType, media, pointer(found.operation, res.status, mediaType));
    let seen = this.seen.get(found.key);
    if (!seen) this.seen.set(found.key, (seen = new Set()));
    seen.add(`${res.status} ${mediaType}`);
    return { status: res.status, contentType, mediaType, body };
  }

  /** The document's schema at a JSON pointer (e.g. a request body's), as a validator. */
  validator(jsonPointer: string): ValidateFunction {
    let validate = this.validators.get(jsonPointer);
    if (!validate)
      this.validators.set(jsonPointer, (validate = this.ajv.compile({ $ref: `${DOC_ID}#${jsonPointer.split('/').map(encodeURIComponent).join('/')}` })));
    return validate;
  }

  private async checkBody(where: string, res: Response, mediaType: string, media: Json, schemaPointer: string): Promise<unknown> {
    const essence = mediaType.split(';')[0]!.trim();
    if (!media.schema) {
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (bytes.byteLength === 0) throw new Error(`${where}: empty ${mediaType} body`);
      return bytes;
    }
    const text = await res.text();
    const payloads = essence === 'text/event-stream' ? sseData(text) : [essence === 'application/json' ? JSON.parse(text) : text];
    if (payloads.length === 0) throw new Error(`${where}: an event stream without events`);
    const validate = this.validator(schemaPointer);
    for (const payload of payloads) {
      if (!validate(payload))
        throw new Error(`${where}: ${JSON.stringify(payload).slice(0, 300)} does not match ${schemaPointer}: ${this.ajv.errorsText(validate.errors)}`);
    }
    return essence === 'text/event-stream' ? payloads : payloads[0];
  }
}

/** The exact media type, or (for a documented type without parameters) the one with the same essence. */
function matchMediaType(contentType: string, documented: string[]): string | undefined {
  const norm = (t: string) =>
    t
      .toLowerCase()
      .replace(/\s*;\s*/g, ';')
      .trim();
  const exact = documented.find((d) => norm(d) === norm(contentType));
  if (exact) return exact;
  const essence = norm(contentType).split(';')[0];
  return documented.find((d) => !d.includes(';') && norm(d) === essence);
}

function pointer(operation: Operation, status: number, mediaType: string): string {
  const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
  return ['', 'paths', esc(operation.path), operation.method.toLowerCase(), 'responses', String(status), 'content', esc(mediaType), 'schema'].join('/');
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
