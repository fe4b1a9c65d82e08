/**
 * POST /chat/completions as text translation (SPEC §4.6): the text is the last user message, the language
 * pair comes from the extension object (`djelia`). Usage counts are what is billed: characters, or tokens
 * for `djelia-translate-v2` (text-translation.ts holds, runs and settles, shared with the native
 * /v1/models/translate). `stream=true` sends the role,
 * the whole translation as one content delta, a `stop` chunk and `[DONE]` (translation is not incremental).
 * As OpenAI does, a stream carries usage only when `stream_options.include_usage` is true: then every chunk
 * has `usage: null` and one more chunk, with `choices: []`, carries the counts before `[DONE]`; otherwise
 * no chunk has a `usage` key (SDKs that sum usage over chunks would count it otherwise where not asked).
 */
import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, RouteDef, SseMessage } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { ChatCompletionChunkSchema, ChatCompletionSchema, ChatUsageSchema, chatRequestSchema } from '../schemas/chat.js';
import { eventStreamContent, jsonContent } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { resolveModel } from './model-resolution.js';
import { translateOnce } from './text-translation.js';

type Message = { role: string; content?: string | Array<{ type: string; text?: string }> | null };
interface ChatBody {
  model: string;
  messages: Message[];
  stream?: boolean | null;
  stream_options?: unknown;
}

/** `stream_options.include_usage === true`; any other shape of `stream_options` is ignored, never refused. */
function includeUsage(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { include_usage?: unknown }).include_usage === true;
}

function lastUserText(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content))
      return m.content
        .filter((p) => p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text)
        .join('\n');
    return '';
  }
  return '';
}

export function chatRoute(deps: CompatDeps): RouteDef {
  const schema = chatRequestSchema(deps.vendor);
  return {
    method: 'POST',
    path: '/chat/completions',
    surface: 'compat',
    auth: true,
    billable: true,
    openapi: {
      operationId: 'createChatCompletion',
      summary: 'Translate text between Bambara, French and English',
      tags: ['Translation'],
      request: { contentType: 'application/json', schema: schema.meta({ id: 'ChatTranslationRequest' }) },
      responses: {
        200: {
          description:
            'The translation as a chat.completion; with stream=true, chat.completion.chunk events (the role, the whole translation as one delta, a stop chunk; with stream_options.include_usage, a last chunk with no choices and the usage), then [DONE]',
          content: [jsonContent(ChatCompletionSchema), eventStreamContent('ChatCompletionStreamEvent', [ChatCompletionChunkSchema], { done: true })],
        },
      },
      errors: [404, 503],
    },
    handler: (req, caller) => translateText(deps, schema, req, caller!),
  };
}

async function translateText(deps: CompatDeps, schema: ReturnType<typeof chatRequestSchema>, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const parsed = parseRequest(schema, await req.body.json()) as Record<string, unknown>;
  // The schema's key for the extension object is computed from config, so its fields are read back typed here.
  const body = parsed as unknown as ChatBody;
  const options = parsed[deps.vendor] as { source_language: string; target_language: string };
  const model = resolveModel(deps.catalog, body.model, 'translation', req);
  const text = lastUserText(body.messages);
  if (!text.trim()) throw new ApiError('invalid_value', 'messages: the last user message has no text to translate.', { param: 'messages' });
  const { translation, usage, onDelivered } = await translateOnce(deps, req, caller, {
    model,
    text,
    source: options.source_language,
    target: options.target_language,
  });

  const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  if (body.stream)
    return { kind: 'sse', events: chunks(id, created, model.id, translation, includeUsage(body.stream_options) ? usage : undefined), onDelivered };
  return {
    kind: 'json',
    onDelivered,
    body: {
      id,
      object: 'chat.completion',
      created,
      model: model.id,
      choices: [{ index: 0, message: { role: 'assistant', content: translation }, finish_reason: 'stop', logprobs: null }],
      usage,
    } satisfies z.output<typeof ChatCompletionSchema>,
  };
}

type Chunk = z.output<typeof ChatCompletionChunkSchema>;

/** The stream's chunks; `usage` is given only when the client asked for it (include_usage). */
async function* chunks(
  id: string,
  created: number,
  model: string,
  content: string,
  usage: z.output<typeof ChatUsageSchema> | undefined,
): AsyncGenerator<SseMessage> {
  const event = (choices: Chunk['choices'], last = false): SseMessage => {
    const chunk: Chunk = { id, object: 'chat.completion.chunk', created, model, choices, ...(usage ? { usage: last ? usage : null } : {}) };
    return { data: JSON.stringify(chunk) };
  };
  const choice = (delta: Chunk['choices'][number]['delta'], finish: 'stop' | null) => [{ index: 0, delta, finish_reason: finish, logprobs: null }];
  yield event(choice({ role: 'assistant', content: '' }, null));
  yield event(choice({ content }, null));
  yield event(choice({}, 'stop'));
  if (usage) yield event([], true);
  yield { data: '[DONE]' };
}
