/**
 * The native translation routes (SPEC §2.7, §4.7), on the primary surface's translation path
 * (compat/text-translation.ts): banjugu-1, held, priced and recorded exactly as POST /chat/completions
 * translating the same text.
 * - GET /v1/models/translate/supported-languages → `[{code, name}]`.
 * - POST /v1/models/translate `{text, source, target}` → `{text}`. Languages must be supported codes and
 *   differ (422 entries at `source` / `target`); `text` must not be empty (422) and must hold something
 *   other than whitespace (400, as the primary surface answers an empty user message). No character bound
 *   beyond the primary surface's: the JSON body limit (413).
 */
import { z } from 'zod';
import { LANGUAGES } from '../schemas/chat.js';
import { ApiError } from '../errors.js';
import type { CompatDeps } from '../compat/deps.js';
import { resolveModel } from '../compat/model-resolution.js';
import { translateOnce } from '../compat/text-translation.js';
import { jsonContent } from '../schemas/responses.js';
import type { ApiRequest, ApiResult, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { readNativeJson } from './native-json-body.js';
import { parseNative } from './native-validation.js';
import { TRANSLATION_MODEL_ID } from '../../engines/model-ids.js';

const LANGUAGE_NAMES: Record<(typeof LANGUAGES)[number], string> = { bam_Latn: 'Bambara', fra_Latn: 'French', eng_Latn: 'English' };
const MODEL = TRANSLATION_MODEL_ID;
const TAGS = ['Native (deprecated)'];

const SupportedLanguagesSchema = z.array(z.object({ code: z.string(), name: z.string() })).meta({ id: 'NativeSupportedLanguages' });
const TranslationResponseSchema = z.object({ text: z.string() }).meta({ id: 'NativeTranslationResponse' });

export const NativeTranslationRequestSchema = z
  .looseObject({
    text: z.string().min(1).describe('The text to translate'),
    source: z.enum(LANGUAGES).describe('Language of the text'),
    target: z.enum(LANGUAGES).describe('Language to translate into; not the source'),
  })
  // Checked once the body is an object with both codes valid, whatever else is wrong, so one answer lists
  // every problem (and a body that is not an object never reaches it).
  .refine((body) => body.source !== body.target, {
    message: 'Value error, source and target must be different languages',
    path: ['target'],
    when: (payload) => !payload.issues.some((issue) => !issue.path?.length || issue.path[0] === 'source' || issue.path[0] === 'target'),
  })
  .meta({ id: 'NativeTranslationRequest' });

export function nativeTranslateRoutes(deps: CompatDeps): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/v1/models/translate/supported-languages',
      surface: 'native',
      auth: true,
      openapi: {
        operationId: 'nativeSupportedLanguages',
        summary: 'The languages banjugu-1 translates between',
        tags: TAGS,
        responses: { 200: { description: 'Each language code with its English name', content: [jsonContent(SupportedLanguagesSchema)] } },
      },
      handler: async () => ({ kind: 'json', body: LANGUAGES.map((code) => ({ code, name: LANGUAGE_NAMES[code] })) }),
    },
    {
      method: 'POST',
      path: '/v1/models/translate',
      surface: 'native',
      auth: true,
      billable: true,
      openapi: {
        operationId: 'nativeTranslate',
        summary: 'Translate text between Bambara, French and English (banjugu-1)',
        tags: TAGS,
        request: { contentType: 'application/json', schema: NativeTranslationRequestSchema },
        responses: { 200: { description: 'The translation', content: [jsonContent(TranslationResponseSchema)] } },
        errors: [422],
      },
      handler: (req, caller) => translate(deps, req, caller!),
    },
  ];
}

async function translate(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseNative(NativeTranslationRequestSchema, await readNativeJson(req), 'body');
  if (!body.text.trim()) throw new ApiError('invalid_value', 'text: there is nothing to translate (only whitespace).', { param: 'text' });
  const model = resolveModel(deps.catalog, MODEL, 'translation');
  const { translation, onDelivered } = await translateOnce(deps, req, caller, { model, text: body.text, source: body.source, target: body.target });
  return { kind: 'json', body: { text: translation }, onDelivered };
}
