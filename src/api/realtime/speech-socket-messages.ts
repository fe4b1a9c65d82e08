/**
 * The wire shapes of the streaming speech socket (README "Streaming speech socket"), in the ElevenLabs
 * stream-input form (PROTOCOLS §8): what a client message may hold, and the audio, final and error
 * messages the server sends. Pure translation, no I/O.
 *
 * Client messages are JSON objects: `text` (a piece of the text; `""` ends the input), `flush` (speak
 * what is pending now), and fields ElevenLabs clients send that are accepted and do not change the
 * audio (`voice_settings`, `generation_config`, `try_trigger_generation`, `pronunciation_dictionary_locators`,
 * and the credential fields `xi_api_key`, `authorization`, read only from a socket's first message).
 * The multi-context socket's messages add `context_id`, `close_context` and `close_socket`, and every
 * message of one of its contexts carries `contextId`. Unknown fields are ignored; a known field of the
 * wrong type is an error naming it.
 */
import { z } from 'zod';
import type { CharacterAlignment, PhraseAlignment } from '../../voice/phrase-speaker.js';
import { ApiError } from '../errors.js';

const ClientMessageSchema = z.looseObject({
  text: z.string().optional(),
  flush: z.boolean().optional(),
  try_trigger_generation: z.boolean().optional(),
  voice_settings: z.looseObject({}).nullable().optional(),
  generation_config: z
    .looseObject({ chunk_length_schedule: z.array(z.number()).optional() })
    .nullable()
    .optional(),
  pronunciation_dictionary_locators: z.array(z.looseObject({})).nullable().optional(),
  xi_api_key: z.string().optional(),
  authorization: z.string().optional(),
});

const MultiContextMessageSchema = ClientMessageSchema.extend({
  context_id: z.string().min(1).max(256).optional(),
  close_context: z.boolean().optional(),
  close_socket: z.boolean().optional(),
});

export interface ClientMessage {
  /** Undefined when the message carries no text (a bare flush). */
  text?: string;
  flush: boolean;
}

export interface MultiContextMessage extends ClientMessage {
  /** Undefined for the default context. */
  contextId?: string;
  closeContext: boolean;
  closeSocket: boolean;
}

/** Parses one text frame; an ApiError (invalid_json / invalid_value, naming the field) when it is not a valid message. */
export function parseClientMessage(frame: string): ClientMessage {
  const { text, flush } = parseWith(ClientMessageSchema, frame);
  if (text === undefined && !flush) {
    throw new ApiError('missing_required_parameter', 'text: a message needs `text` (a piece of text, or "" to end the input) or `"flush": true`.', {
      param: 'text',
    });
  }
  return { ...(text !== undefined ? { text } : {}), flush: flush ?? false };
}

/** Parses one frame of the multi-context socket: text, flush, close_context (of `context_id`) or close_socket. */
export function parseMultiContextMessage(frame: string): MultiContextMessage {
  const { text, flush, context_id, close_context, close_socket } = parseWith(MultiContextMessageSchema, frame);
  if (text === undefined && !flush && !close_context && !close_socket) {
    throw new ApiError(
      'missing_required_parameter',
      'text: a message needs `text` (a piece of text, or "" to keep its context alive), `"flush": true`, `"close_context": true` or `"close_socket": true`.',
      { param: 'text' },
    );
  }
  return {
    ...(text !== undefined ? { text } : {}),
    flush: flush ?? false,
    ...(context_id !== undefined ? { contextId: context_id } : {}),
    closeContext: close_context ?? false,
    closeSocket: close_socket ?? false,
  };
}

/** The credential a socket's first message may carry (ElevenLabs' `xi_api_key`, or `authorization` as a bearer token). */
export function credentialInMessage(frame: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(frame);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null) return undefined;
  const { xi_api_key: key, authorization } = json as Record<string, unknown>;
  if (typeof key === 'string' && key.trim()) return key.trim();
  if (typeof authorization === 'string' && authorization.trim()) return authorization.trim().replace(/^Bearer\s+/i, '');
  return undefined;
}

function parseWith<S extends z.ZodType>(schema: S, frame: string): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(frame);
  } catch {
    throw new ApiError('invalid_json', 'The message is not valid JSON: send one JSON object per text frame, such as {"text":"i ni ce "}.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ApiError('invalid_value', 'The message must be a JSON object, such as {"text":"i ni ce "}.');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.join('.');
    throw new ApiError('invalid_value', `${param}: ${issue.message}.`, { param });
  }
  return parsed.data;
}

/**
 * An audio message. Alignment times are on the socket's audio clock (ms since its first sample), so a client
 * can place every character without summing message durations. `alignment` covers the text as received
 * (whitespace collapsed), `normalizedAlignment` what the voice says for it (digits as words).
 */
export function audioMessage(audio: Uint8Array, alignments: PhraseAlignment[], contextId?: string): string {
  return JSON.stringify({
    audio: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength).toString('base64'),
    isFinal: null,
    normalizedAlignment: alignments.length ? joined(alignments.map((a) => a.spoken)) : null,
    alignment: alignments.length ? joined(alignments.map((a) => a.text)) : null,
    ...(contextId !== undefined ? { contextId } : {}),
  });
}

/** After a stream's last audio; on the multi-context socket, with the context it ends. */
export function finalMessage(contextId?: string): string {
  return JSON.stringify({ isFinal: true, ...(contextId !== undefined ? { contextId } : {}) });
}

/**
 * An error message: ElevenLabs' fields (`message`, `error` = the code as a string, `code` = the close code
 * that follows, or null when the socket stays open) with the OpenAI envelope's `type` and `param` beside them,
 * and `contextId` when it concerns one context of the multi-context socket.
 */
export function errorMessage(err: ApiError, closeCode: number | null, error: string = err.code, contextId?: string): string {
  return JSON.stringify({ message: err.message, error, code: closeCode, type: err.type, param: err.param, ...(contextId !== undefined ? { contextId } : {}) });
}

function joined(parts: CharacterAlignment[]): CharacterAlignment {
  return {
    chars: parts.flatMap((p) => p.chars),
    charStartTimesMs: parts.flatMap((p) => p.charStartTimesMs),
    charDurationsMs: parts.flatMap((p) => p.charDurationsMs),
  };
}
