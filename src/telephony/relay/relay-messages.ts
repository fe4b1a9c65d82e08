/**
 * The ConversationRelay message set (Twilio's, which Telnyx speaks too), as Kuma speaks it to the
 * integrator's application: what the app may send (`text`, `play`, `sendDigits`, `language`, `end`) parsed
 * with zod into typed messages, and builders for what Kuma sends (`setup`, `prompt`, `interrupt`, `dtmf`,
 * `error`). Field names and types follow Twilio's published messages exactly, so an application written for
 * ConversationRelay works with Kuma by changing its URL. Unknown fields are ignored (apps send extras, and
 * Twilio adds fields over time); an unknown `type` or a mistyped field is a RelayMessageError, which the link
 * answers with an `error` message — as Twilio does, the message is dropped and the session goes on.
 */
import { z } from 'zod';
import { RelayMessageError } from './relay-errors.js';

// ── App → Kuma ──────────────────────────────────────────────────────────────────────────────────────────

/** When caller input may cut the playback short. Twilio also takes booleans: true = any, false = none. */
export type Interruptible = 'none' | 'dtmf' | 'speech' | 'any';

const InterruptibleField = z
  .union([z.boolean(), z.enum(['none', 'dtmf', 'speech', 'any'])], {
    error: 'must be a boolean or one of "none", "dtmf", "speech", "any"',
  })
  .transform((value): Interruptible => (value === true ? 'any' : value === false ? 'none' : value));

const HttpUrl = z.string().refine(
  (value) => {
    if (!URL.canParse(value)) return false;
    const protocol = new URL(value).protocol;
    return protocol === 'http:' || protocol === 'https:';
  },
  { error: 'must be an absolute http:// or https:// URL' },
);

const TextSchema = z.object({
  type: z.literal('text'),
  // An empty token is legitimate: apps close a talk cycle with {"token": "", "last": true}.
  token: z.string(),
  // Twilio's examples always send `last`; an app that leaves it out means "more to come".
  last: z.boolean().default(false),
  lang: z.string().min(1).optional(),
  interruptible: InterruptibleField.optional(),
  preemptible: z.boolean().optional(),
});

const PlaySchema = z.object({
  type: z.literal('play'),
  source: HttpUrl,
  // As TwiML <Play loop>: how many times to play it, 0 = until the call or an interruption stops it.
  loop: z.number().int().min(0).max(1000).optional(),
  interruptible: InterruptibleField.optional(),
  preemptible: z.boolean().optional(),
});

const SendDigitsSchema = z.object({
  type: z.literal('sendDigits'),
  // Twilio's digit set: 0-9, * and #, w for a half-second pause.
  digits: z.string().regex(/^[0-9*#wW]{1,256}$/, { error: 'must be 1 to 256 of 0-9, *, #, w' }),
});

const LanguageSchema = z
  .object({
    type: z.literal('language'),
    ttsLanguage: z.string().min(1).optional(),
    transcriptionLanguage: z.string().min(1).optional(),
  })
  .refine((m) => m.ttsLanguage !== undefined || m.transcriptionLanguage !== undefined, {
    error: 'a language message needs ttsLanguage or transcriptionLanguage',
  });

const EndSchema = z.object({
  type: z.literal('end'),
  // Twilio documents a string (usually JSON the app stringified); an object is stringified rather than
  // refused, because refusing `end` would leave the call running.
  handoffData: z
    .union([z.string(), z.record(z.string(), z.unknown())], { error: 'must be a string' })
    .transform((value) => (typeof value === 'string' ? value : JSON.stringify(value)))
    .optional(),
});

export type TextMessage = z.output<typeof TextSchema>;
export type PlayMessage = z.output<typeof PlaySchema>;
export type SendDigitsMessage = z.output<typeof SendDigitsSchema>;
export type LanguageMessage = z.output<typeof LanguageSchema>;
export type EndMessage = z.output<typeof EndSchema>;
export type AppMessage = TextMessage | PlayMessage | SendDigitsMessage | LanguageMessage | EndMessage;
export type AppMessageType = AppMessage['type'];

const SCHEMAS: Record<AppMessageType, z.ZodType<AppMessage>> = {
  text: TextSchema,
  play: PlaySchema,
  sendDigits: SendDigitsSchema,
  language: LanguageSchema,
  end: EndSchema,
};
export const APP_MESSAGE_TYPES = Object.keys(SCHEMAS) as AppMessageType[];

/** Parses one text frame from the application; throws RelayMessageError (never a zod or JSON error). */
export function parseAppMessage(text: string): AppMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RelayMessageError('invalid_json', 'the message is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RelayMessageError('invalid_json', 'the message must be a JSON object');
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') throw new RelayMessageError('unknown_type', 'the message needs a string "type"', 'type');
  // hasOwn: "constructor" or "__proto__" must not reach a prototype property.
  if (!Object.hasOwn(SCHEMAS, type)) {
    throw new RelayMessageError('unknown_type', `unknown message type ${JSON.stringify(type)}; expected one of ${APP_MESSAGE_TYPES.join(', ')}`, 'type');
  }
  // reportInput: the issue carries the offending value, so "missing" and "mistyped" read differently.
  const parsed = SCHEMAS[type as AppMessageType].safeParse(value, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.length > 0 ? issue.path.map(String).join('.') : null;
    throw new RelayMessageError('invalid_message', `${type}: ${describeIssue(issue, param)}`, param);
  }
  return parsed.data;
}

/** One zod issue as a sentence a developer reading the app's logs understands. */
function describeIssue(issue: z.core.$ZodIssue, param: string | null): string {
  const field = param === null ? 'the message' : `"${param}"`;
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return `${field} is required`;
    return `${field} must be ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
  }
  if (issue.code === 'too_small') return issue.origin === 'string' ? `${field} must not be empty` : `${field} must be at least ${issue.minimum}`;
  if (issue.code === 'too_big') return issue.origin === 'string' ? `${field} is too long` : `${field} must be at most ${issue.maximum}`;
  // Custom messages above are written for this sentence ("must be …").
  return param === null ? issue.message : `${field} ${issue.message}`;
}

/** The `description` of the `error` Kuma answers an unusable message with (Twilio's wording). */
export function invalidMessageDescription(error: RelayMessageError, raw?: string): string {
  const excerpt = raw === undefined ? '' : ` (${raw.length > 200 ? `${raw.slice(0, 200)}…` : raw})`;
  return `Invalid message received: ${error.message}${excerpt}`;
}

// ── Kuma → App ──────────────────────────────────────────────────────────────────────────────────────────

export interface SetupMessage {
  type: 'setup';
  sessionId: string;
  accountSid: string;
  parentCallSid: string;
  callSid: string;
  from: string;
  to: string;
  forwardedFrom: string;
  callType: string;
  callerName: string;
  direction: string;
  callStatus: string;
  applicationSid: string;
  customParameters: Record<string, string>;
}

export type SetupFields = Partial<Omit<SetupMessage, 'type'>> & Pick<SetupMessage, 'sessionId' | 'callSid'>;

/**
 * Twilio sends every setup field, an empty string where it has no value (`parentCallSid: ""`), so apps
 * read them without checks; Kuma does the same.
 */
export function setupMessage(fields: SetupFields): SetupMessage {
  return {
    type: 'setup',
    sessionId: fields.sessionId,
    accountSid: fields.accountSid ?? '',
    parentCallSid: fields.parentCallSid ?? '',
    callSid: fields.callSid,
    from: fields.from ?? '',
    to: fields.to ?? '',
    forwardedFrom: fields.forwardedFrom ?? '',
    callType: fields.callType ?? '',
    callerName: fields.callerName ?? '',
    direction: fields.direction ?? '',
    callStatus: fields.callStatus ?? '',
    applicationSid: fields.applicationSid ?? '',
    customParameters: { ...(fields.customParameters ?? {}) },
  };
}

/** Kuma's extension: the caller's own words beside a translated prompt (bilingual bridge). */
export interface PromptOriginal {
  lang: string;
  voicePrompt: string;
}

export interface PromptMessage {
  type: 'prompt';
  voicePrompt: string;
  lang: string;
  last: boolean;
  /** Present only when the prompt was translated; standard apps ignore the extra field. */
  original?: PromptOriginal;
}

export function promptMessage(prompt: { voicePrompt: string; lang: string; last: boolean; original?: PromptOriginal }): PromptMessage {
  const message: PromptMessage = { type: 'prompt', voicePrompt: prompt.voicePrompt, lang: prompt.lang, last: prompt.last };
  if (prompt.original !== undefined) message.original = { lang: prompt.original.lang, voicePrompt: prompt.original.voicePrompt };
  return message;
}

export interface InterruptMessage {
  type: 'interrupt';
  utteranceUntilInterrupt: string;
  durationUntilInterruptMs: number;
}

/**
 * `durationUntilInterruptMs` is a whole number, as in Twilio's current reference and Telnyx's (an older
 * Twilio page showed "460" as a string; a number works for apps that parse it either way).
 */
export function interruptMessage(utteranceUntilInterrupt: string, durationUntilInterruptMs: number): InterruptMessage {
  const duration = Number.isFinite(durationUntilInterruptMs) ? Math.max(0, Math.round(durationUntilInterruptMs)) : 0;
  return { type: 'interrupt', utteranceUntilInterrupt, durationUntilInterruptMs: duration };
}

export interface DtmfMessage {
  type: 'dtmf';
  digit: string;
}

export function dtmfMessage(digit: string): DtmfMessage {
  return { type: 'dtmf', digit };
}

export interface ErrorMessage {
  type: 'error';
  description: string;
}

export function errorMessage(description: string): ErrorMessage {
  return { type: 'error', description };
}

export type KumaMessage = SetupMessage | PromptMessage | InterruptMessage | DtmfMessage | ErrorMessage;
