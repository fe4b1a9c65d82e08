/**
 * The OpenAPI document's request schemas say what the server accepts: for random request bodies, ajv on
 * the document and the zod schema the handler validates with agree (a client generated from the document
 * never omits a field the server would default, nor sends one it would refuse). The chat request has a
 * refinement JSON Schema cannot state (source ≠ target), so there only "the server accepts ⇒ the document
 * accepts" holds. Also: a component id given two different schemas is refused at build time.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../../src/api/openapi.js';
import { speechRoute } from '../../../src/api/compat/speech.js';
import { chatRoute } from '../../../src/api/compat/chat.js';
import { transcriptionRoute } from '../../../src/api/compat/transcriptions.js';
import type { CompatDeps } from '../../../src/api/compat/deps.js';
import { speechRequestSchema } from '../../../src/api/schemas/speech.js';
import { chatRequestSchema } from '../../../src/api/schemas/chat.js';
import { TranscriptionFormSchema } from '../../../src/api/schemas/audio.js';
import { jsonContent } from '../../../src/api/schemas/responses.js';
import type { RouteDef } from '../../../src/api/types.js';

// Only the vendor is read when the routes are defined; the handlers never run here.
const deps = { vendor: 'djelia' } as CompatDeps;
const doc = buildOpenApiDocument([speechRoute(deps), chatRoute(deps), transcriptionRoute(deps)], { title: 'Kuma', version: 'test', vendor: 'djelia' }) as any;

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
ajvFormats.default(ajv);
ajv.addFormat('binary', true);
ajv.addVocabulary(['openapi', 'info', 'servers', 'paths', 'components']);
ajv.addSchema({ ...doc, $id: 'doc' });
const requestSchema = (path: string, type: string) =>
  ajv.compile({ $ref: `doc#/paths/${path.replace(/\//g, '~1')}/post/requestBody/content/${encodeURIComponent(type.replace('/', '~1'))}/schema` });

/** A value that is sometimes right for a field and sometimes wrong in a plausible way. */
const anyOf = <T>(...arbs: fc.Arbitrary<T>[]) => fc.oneof(...arbs);
const number = (min: number, max: number) => anyOf(fc.double({ min, max, noNaN: true }), fc.integer({ min: Math.floor(min), max: Math.ceil(max) }));
const text = anyOf(fc.constantFrom('', 'i ni ce', 'jifili-1', 'mp3', 'sse', 'x'), fc.string({ maxLength: 8 }));
const junk = anyOf<unknown>(fc.constant(null), fc.boolean(), fc.integer({ min: -3, max: 3 }), fc.constant([]), fc.constant({}));

const speechOptions = fc.record(
  {
    description: anyOf<unknown>(fc.string({ maxLength: 3 }), fc.constant('x'.repeat(501)), fc.constant(null), junk),
    chunk_size: anyOf<unknown>(number(-1, 3), junk),
    temperature: anyOf<unknown>(number(-1, 3), fc.constant(null)),
    top_p: anyOf<unknown>(number(-0.5, 1.5), fc.constant(null)),
    repetition_penalty: anyOf<unknown>(number(-0.5, 2.5), fc.constant(null)),
    speaker: anyOf<unknown>(number(-1, 5), junk),
    unknown_option: junk,
  },
  { requiredKeys: [] },
);
const speechBody = fc.record(
  {
    model: anyOf<unknown>(text, junk),
    input: anyOf<unknown>(text, junk),
    voice: anyOf<unknown>(fc.constantFrom('moussa', 'alloy'), junk),
    response_format: anyOf<unknown>(fc.constantFrom('mp3', 'wav', 'nope'), junk),
    stream_format: anyOf<unknown>(fc.constantFrom('audio', 'sse', 'events'), junk),
    djelia: anyOf<unknown>(speechOptions, junk),
    speed: junk,
    extra_field: junk,
  },
  { requiredKeys: [] },
);
const language = anyOf<unknown>(fc.constantFrom('bam_Latn', 'fra_Latn', 'eng_Latn', 'deu_Latn'), junk);
const chatBody = fc.record(
  {
    model: anyOf<unknown>(text, junk),
    messages: anyOf<unknown>(
      fc.array(
        fc.record(
          {
            role: anyOf<unknown>(fc.constantFrom('user', 'system'), junk),
            content: anyOf<unknown>(text, fc.constant(null), fc.constant([{ type: 'text', text: 'i ni ce' }])),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 3 },
      ),
      junk,
    ),
    stream: anyOf<unknown>(fc.boolean(), fc.constant(null), fc.constant('yes')),
    djelia: anyOf<unknown>(fc.record({ source_language: language, target_language: language }, { requiredKeys: [] }), junk),
    temperature: junk,
  },
  { requiredKeys: [] },
);
/** Form fields as typed values (what the document describes); the wire sends them as strings, which zod coerces. */
const transcriptionForm = fc.record(
  {
    model: anyOf<unknown>(text, fc.constant(null)),
    response_format: anyOf<unknown>(fc.constantFrom('json', 'text', 'verbose_json', 'srt', 'vtt', 'xml'), fc.constant(null)),
    stream: anyOf<unknown>(fc.boolean(), fc.constant(null)),
    temperature: anyOf<unknown>(number(-1, 2), fc.constant(null)),
    language: anyOf<unknown>(text, fc.constant(null)),
    prompt: anyOf<unknown>(text, fc.constant(null)),
  },
  { requiredKeys: [] },
);

const SEED = 20260610;

describe('the document describes the requests the server accepts', () => {
  it('speech: ajv on the document and the zod schema agree on every body (property)', () => {
    const validate = requestSchema('/audio/speech', 'application/json');
    const schema = speechRequestSchema('djelia');
    fc.assert(
      fc.property(speechBody, (body) => {
        expect(validate(body), JSON.stringify(validate.errors)).toBe(schema.safeParse(body).success);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('speech: the specific bodies of the issue (defaults optional, djelia without chunk_size)', () => {
    const validate = requestSchema('/audio/speech', 'application/json');
    expect(validate({ input: 'i ni ce' })).toBe(true);
    expect(validate({ input: 'i ni ce', djelia: {} })).toBe(true);
    expect(validate({ input: 'i ni ce', djelia: { temperature: 0.7 } })).toBe(true);
    expect(validate({ input: 'i ni ce', djelia: { chunk_size: 2.5 } })).toBe(false);
  });

  it('chat: whatever the server accepts, the document accepts (property)', () => {
    const validate = requestSchema('/chat/completions', 'application/json');
    const schema = chatRequestSchema('djelia');
    fc.assert(
      fc.property(chatBody, (body) => {
        if (schema.safeParse(body).success) expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('transcriptions: ajv on the document (file aside) and the form schema agree on typed fields (property)', () => {
    const validate = requestSchema('/audio/transcriptions', 'multipart/form-data');
    fc.assert(
      fc.property(transcriptionForm, (fields) => {
        expect(validate({ ...fields, file: 'bytes' }), JSON.stringify(validate.errors)).toBe(TranscriptionFormSchema.safeParse(fields).success);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('building the document', () => {
  it('refuses a component id given two different schemas', () => {
    const route = (path: string, schema: z.ZodType): RouteDef => ({
      method: 'GET',
      path,
      surface: 'compat',
      auth: false,
      openapi: { operationId: path, summary: path, responses: { 200: { description: 'x', content: [jsonContent(schema)] } } },
      handler: async () => ({ kind: 'json', body: {} }),
    });
    const a = route('/a', z.object({ a: z.string() }).meta({ id: 'Same' }));
    const b = route('/b', z.object({ b: z.number() }).meta({ id: 'Same' }));
    expect(() => buildOpenApiDocument([a, b], { title: 't', version: 'v', vendor: 'djelia' })).toThrow(/Same has two different definitions/);
    expect(() =>
      buildOpenApiDocument([a, route('/c', z.object({ a: z.string() }).meta({ id: 'Same' }))], { title: 't', version: 'v', vendor: 'djelia' }),
    ).not.toThrow();
  });
});
