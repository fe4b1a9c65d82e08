/**
 * Client events of an OpenAI Realtime transcription or translation session → what the session takes.
 * GA `session.update` (`session.type: "transcription"`, or `"realtime"`: see GaSession), beta
 * `transcription_session.update`, the translation resource's `session.update`,
 * `input_audio_buffer.append|commit|clear`, `conversation.item.retrieve` (and the translation resource's
 * `session.input_audio_buffer.append`, `session.close`). Unknown fields are ignored; anything malformed
 * throws a RealtimeEventError, which the handler answers with an `error` event (the session goes on).
 */
import { z } from 'zod';
import { DEFAULT_SERVER_VAD, type InputFormat, type TurnDetectionConfig } from '../../realtime/session-config.js';

export type Shape = 'ga' | 'beta' | 'translation';

/** A session update as the wire gave it; the model is still a name (the handler resolves it). */
export interface WireUpdate {
  format?: InputFormat;
  model?: string;
  language?: string | null;
  prompt?: string | null;
  turnDetection?: Partial<TurnDetectionConfig> | null;
}

export type ClientEvent =
  | { kind: 'update'; shape: Shape; update: WireUpdate; ref?: string }
  | { kind: 'append'; audio: Uint8Array; ref?: string }
  | { kind: 'commit' | 'clear' | 'close'; ref?: string }
  /** GA conversation.item.retrieve: answered by the connection from the items it keeps (conversation-items.ts). */
  | { kind: 'retrieve'; itemId: string; ref?: string };

export class RealtimeEventError extends Error {
  constructor(
    readonly code: 'invalid_json' | 'invalid_value' | 'unknown_event_type' | 'request_too_large',
    message: string,
    readonly param: string | null = null,
    readonly ref?: string,
  ) {
    super(message);
    this.name = 'RealtimeEventError';
  }
}

const ServerVad = z.object({
  // semantic_vad (what the OpenAI Agents SDK asks for by default) is served as server_vad at its defaults.
  type: z.enum(['server_vad', 'semantic_vad']).optional(),
  threshold: z.number().optional(),
  prefix_padding_ms: z.number().int().optional(),
  silence_duration_ms: z.number().int().optional(),
  idle_timeout_ms: z.number().int().nullable().optional(),
});
const Transcription = z.object({ model: z.string().optional(), language: z.string().nullable().optional(), prompt: z.string().nullable().optional() });
const GaFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('audio/pcm'), rate: z.number().int().optional() }),
  z.object({ type: z.literal('audio/pcmu') }),
  z.object({ type: z.literal('audio/pcma') }),
]);
/**
 * GA sessions. `type: "realtime"` is a conversation session's update (the OpenAI Agents SDK sends nothing
 * else): a transcription session takes from it what applies to transcription — the input format, the
 * transcription model and language, turn detection — and ignores the rest (the conversation model,
 * instructions, output modalities, output audio and voice, tools, tracing), which zod strips.
 */
const GaSession = z.object({
  type: z.enum(['transcription', 'realtime']).optional(),
  audio: z
    .object({
      input: z
        .object({ format: GaFormat.optional(), transcription: Transcription.nullable().optional(), turn_detection: ServerVad.nullable().optional() })
        .optional(),
    })
    .optional(),
});
const BetaSession = z.object({
  input_audio_format: z.enum(['pcm16', 'g711_ulaw', 'g711_alaw']).optional(),
  input_audio_transcription: Transcription.nullable().optional(),
  turn_detection: ServerVad.nullable().optional(),
});
const TranslationSession = z.object({
  audio: z
    .object({
      input: z.object({ transcription: z.object({ model: z.string() }).nullable().optional() }).optional(),
      output: z.object({ language: z.string().optional() }).optional(),
    })
    .optional(),
});

/** Parses one text frame of a session of `shape` ('ga' and 'beta' sessions take both update shapes). */
/**
 * Where a connection's appended audio is decoded: one Buffer reused frame after frame (a fresh one per
 * 20 ms frame is 25 MB/s of buffers at 500 sessions, and the major collections they cause stall the event
 * loop). The audio of an event parsed into it is a view valid until the next parse; the session copies what it
 * keeps. Frames larger than MAX_REUSED get a buffer of their own.
 */
export class AudioScratch {
  static readonly MAX_REUSED = 256 * 1024;
  private buffer = Buffer.allocUnsafe(4096);

  decode(base64: string): Buffer {
    const size = (base64.length / 4) * 3;
    if (size > AudioScratch.MAX_REUSED) return Buffer.from(base64, 'base64');
    if (this.buffer.length < size) this.buffer = Buffer.allocUnsafe(Math.max(size, 2 * this.buffer.length));
    return this.buffer.subarray(0, this.buffer.write(base64, 0, 'base64'));
  }
}

export function parseClientEvent(text: string, translation: boolean, scratch?: AudioScratch): ClientEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RealtimeEventError('invalid_json', 'The event is not valid JSON.');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new RealtimeEventError('invalid_value', 'An event must be a JSON object with a `type`.', 'type');
  const event = raw as Record<string, unknown>;
  const ref = typeof event.event_id === 'string' ? event.event_id : undefined;
  switch (event.type) {
    case 'input_audio_buffer.append':
    case 'session.input_audio_buffer.append':
      return { kind: 'append', audio: decodeAudio(event.audio, ref, scratch), ref };
    case 'input_audio_buffer.commit':
      return { kind: 'commit', ref };
    case 'input_audio_buffer.clear':
      return { kind: 'clear', ref };
    case 'session.close':
      return { kind: 'close', ref };
    case 'conversation.item.retrieve':
      if (translation) break;
      if (typeof event.item_id !== 'string' || event.item_id === '')
        throw new RealtimeEventError('invalid_value', '`item_id` must be a non-empty string.', 'item_id', ref);
      return { kind: 'retrieve', itemId: event.item_id, ref };
    case 'transcription_session.update':
      return { kind: 'update', shape: 'beta', update: betaUpdate(parse(BetaSession, event.session, ref)), ref };
    case 'session.update':
      if (translation) return { kind: 'update', shape: 'translation', update: translationUpdate(parse(TranslationSession, event.session, ref), ref), ref };
      return { kind: 'update', shape: 'ga', update: gaUpdate(parse(GaSession, event.session, ref)), ref };
  }
  throw new RealtimeEventError('unknown_event_type', `Unknown or unsupported event type: ${JSON.stringify(event.type)?.slice(0, 80)}.`, 'type', ref);
}

function decodeAudio(audio: unknown, ref: string | undefined, scratch: AudioScratch | undefined): Uint8Array {
  if (typeof audio !== 'string') throw new RealtimeEventError('invalid_value', '`audio` must be a base64 string.', 'audio', ref);
  // Node's decoder skips characters it does not know and stops at a misplaced '=': a client's corrupted audio
  // must be told, not half-played. Valid base64 of length L with p padding characters decodes to exactly
  // 3L/4 − p bytes, anything skipped makes it shorter — a check that costs nothing per frame, where a regular
  // expression over every frame's text took ≈ 4 µs (a tenth of the main thread at 500 sessions).
  // (The URL-safe alphabet's '-' and '_' decode too, and are accepted.)
  if (audio.length % 4 !== 0) throw new RealtimeEventError('invalid_value', '`audio` is not valid base64.', 'audio', ref);
  const padding = audio.endsWith('==') ? 2 : audio.endsWith('=') ? 1 : 0;
  const bytes = scratch ? scratch.decode(audio) : Buffer.from(audio, 'base64');
  if (bytes.length !== (audio.length / 4) * 3 - padding) throw new RealtimeEventError('invalid_value', '`audio` is not valid base64.', 'audio', ref);
  return bytes;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, ref: string | undefined): T {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = ['session', ...issue.path.map(String)].join('.');
  throw new RealtimeEventError('invalid_value', `Invalid value for '${param}': ${issue.message}`, param, ref);
}

function vadOf(vad: z.infer<typeof ServerVad> | null | undefined): WireUpdate['turnDetection'] {
  if (vad === undefined) return undefined;
  if (vad === null) return null;
  if (vad.type === 'semantic_vad') return { ...DEFAULT_SERVER_VAD };
  return { threshold: vad.threshold, prefixPaddingMs: vad.prefix_padding_ms, silenceDurationMs: vad.silence_duration_ms, idleTimeoutMs: vad.idle_timeout_ms };
}

function transcriptionOf(t: z.infer<typeof Transcription> | null | undefined): Pick<WireUpdate, 'model' | 'language' | 'prompt'> {
  if (!t) return {};
  return { model: t.model, language: t.language, prompt: t.prompt };
}

function gaUpdate(session: z.infer<typeof GaSession>): WireUpdate {
  const input = session.audio?.input ?? {};
  const f = input.format;
  const format: InputFormat | undefined = !f
    ? undefined
    : f.type === 'audio/pcm'
      ? { codec: 'pcm16', rate: f.rate ?? 24_000 }
      : { codec: f.type === 'audio/pcmu' ? 'g711_ulaw' : 'g711_alaw', rate: 8000 };
  return { format, ...transcriptionOf(input.transcription), turnDetection: vadOf(input.turn_detection) };
}

function betaUpdate(session: z.infer<typeof BetaSession>): WireUpdate {
  const f = session.input_audio_format;
  const format: InputFormat | undefined = !f ? undefined : f === 'pcm16' ? { codec: 'pcm16', rate: 24_000 } : { codec: f, rate: 8000 };
  return { format, ...transcriptionOf(session.input_audio_transcription), turnDetection: vadOf(session.turn_detection) };
}

/** In a translation session the target is explicit, so ISO `en`/`fr` name it too. */
const TRANSLATION_LANGUAGES: Record<string, string> = { en: 'eng_Latn', fr: 'fra_Latn', eng_Latn: 'eng_Latn', fra_Latn: 'fra_Latn' };

function translationUpdate(session: z.infer<typeof TranslationSession>, ref: string | undefined): WireUpdate {
  const update: WireUpdate = {};
  const model = session.audio?.input?.transcription?.model;
  if (model) update.model = model;
  const language = session.audio?.output?.language;
  if (language !== undefined) {
    const target = TRANSLATION_LANGUAGES[language];
    if (!target)
      throw new RealtimeEventError(
        'invalid_value',
        `Translation targets are fra_Latn (fr) and eng_Latn (en), not ${JSON.stringify(language).slice(0, 40)}.`,
        'session.audio.output.language',
        ref,
      );
    update.language = target;
  }
  return update;
}
