/**
 * The wire shapes of the streaming speech socket (README "Streaming speech socket"), in the ElevenLabs
 * stream-input form (PROTOCOLS §8): what a client message may hold, and the audio, final and error
 * messages the server sends. Pure translation, no I/O.
 *
 * Client messages are JSON objects: `text` (a piece of the text; `""` ends the input), `flush` (speak
 * what is pending now), and fields ElevenLabs clients send that are accepted and do not change the
 * audio (`voice_settings`, `generation_config`, `try_trigger_generation`, `xi_api_key`, `authorization`).
 * Unknown fields are ignored; a known field of the wrong type is an error naming it.
 */
import { z } from 'zod';
import type { CharacterAlignment, PhraseAlignment } from '../../pipeline/phrase-speaker.js';
import { ApiError } from '../errors.js';

const ClientMessageSchema = z.looseObject({
  text: z.string().optional(),
  flush: z.boolean().optional(),
  try_trigger_generation: z.boolean().optional(),
  voice_settings: z.looseObject({}).nullable().optional(),
  generation_config: z.looseObject({ chunk_length_schedule: z.array(z.number()).optional() }).nullable().optional(),
  xi_api_key: z.string().optional(),
  authorization: z.string().optional(),
});

export interface ClientMessage {
  /** Undefined when the message carries no text (a bare flush). */
  text?: string;
  flush: boolean;
}

/** Parses one text frame; an ApiError (invalid_json / invalid_value, naming the field) when it is not a valid message. */
export function parseClientMessage(frame: string): ClientMessage {
  let json: unknown;
  try {
    json = JSON.parse(frame);
  } catch {
    throw new ApiError('invalid_json', 'The message is not valid JSON: send one JSON object per text frame, such as {"text":"i ni ce "}.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ApiError('invalid_value', 'The message must be a JSON object, such as {"text":"i ni ce "}.');
  }
  const parsed = ClientMessageSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.join('.');
    throw new ApiError('invalid_value', `${param}: ${issue.message}.`, { param });
  }
  const { text, flush } = parsed.data;
  if (text === undefined && !flush) {
    throw new ApiError('missing_required_parameter', 'text: a message needs `text` (a piece of text, or "" to end the input) or `"flush": true`.', { param: 'text' });
  }
  return { ...(text !== undefined ? { text } : {}), flush: flush ?? false };
}

/**
 * An audio message. Alignment times are on the socket's audio clock (ms since its first sample), so a client
 * can place every character without summing message durations. `alignment` covers the text as received
 * (whitespace collapsed), `normalizedAlignment` what the voice says for it (digits as words).
 */
export function audioMessage(audio: Uint8Array, alignments: PhraseAlignment[]): string {
  return JSON.stringify({
    audio: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength).toString('base64'),
    isFinal: null,
    normalizedAlignment: alignments.length ? joined(alignments.map((a) => a.spoken)) : null,
    alignment: alignments.length ? joined(alignments.map((a) => a.text)) : null,
  });
}

export function finalMessage(): string {
  return JSON.stringify({ isFinal: true });
}

/**
 * An error message: ElevenLabs' fields (`message`, `error` = the code as a string, `code` = the close code
 * that follows, or null when the socket stays open) with the OpenAI envelope's `type` and `param` beside them.
 */
export function errorMessage(err: ApiError, closeCode: number | null, error: string = err.code): string {
  return JSON.stringify({ message: err.message, error, code: closeCode, type: err.type, param: err.param });
}

function joined(parts: CharacterAlignment[]): CharacterAlignment {
  return {
    chars: parts.flatMap((p) => p.chars),
    charStartTimesMs: parts.flatMap((p) => p.charStartTimesMs),
    charDurationsMs: parts.flatMap((p) => p.charDurationsMs),
  };
}
