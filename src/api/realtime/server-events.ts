/**
 * Session outputs → OpenAI Realtime server events, in the session's shape: GA and beta transcription
 * sessions share the conversation/input_audio_buffer events and differ in the session object; translation
 * sessions speak the translation resource's events (`session.input_transcript.delta`,
 * `session.output_transcript.delta`, `session.closed`) plus one Kuma event per turn that reports its usage.
 */
import type { SessionConfig } from '../../realtime/session-config.js';
import type { SessionOutput } from '../../realtime/session-events.js';
import type { Shape } from './client-events.js';

export type ServerEvent = Record<string, unknown> & { type: string };

/** What formatting needs to remember across a session's events. */
export interface OutputState {
  /** Source / translated text already went out (translation sessions: later deltas carry their separating space). */
  sourceSent: boolean;
  targetSent: boolean;
  /** A transcription-shaped session with a translation target: its transcripts are translations. */
  translating: boolean;
}

const FORMAT_GA: Record<string, (rate: number) => object> = {
  pcm16: (rate) => ({ type: 'audio/pcm', rate }),
  g711_ulaw: () => ({ type: 'audio/pcmu' }),
  g711_alaw: () => ({ type: 'audio/pcma' }),
};

function turnDetection(config: SessionConfig): object | null {
  const vad = config.turnDetection;
  if (!vad) return null;
  return {
    type: 'server_vad',
    threshold: vad.threshold,
    prefix_padding_ms: vad.prefixPaddingMs,
    silence_duration_ms: vad.silenceDurationMs,
    idle_timeout_ms: vad.idleTimeoutMs,
  };
}

function transcription(config: SessionConfig): object | null {
  // A session that translates because the client named the translation model echoes that name.
  return config.model ? { model: config.translationModel ?? config.model.id, language: config.language, prompt: config.prompt } : null;
}

/** The session object of session.created / session.updated / transcription_session.updated. */
export function sessionObject(shape: Shape, id: string, config: SessionConfig): object {
  if (shape === 'translation') {
    return {
      id,
      object: 'realtime.translation_session',
      type: 'translation',
      model: config.model?.id ?? null,
      expires_at: 0,
      audio: { input: { transcription: config.model ? { model: config.model.id } : null, noise_reduction: null }, output: { language: config.target } },
    };
  }
  if (shape === 'beta') {
    return {
      id,
      object: 'realtime.transcription_session',
      input_audio_format: config.format.codec,
      input_audio_transcription: transcription(config),
      turn_detection: turnDetection(config),
      input_audio_noise_reduction: null,
      include: [],
    };
  }
  return {
    id,
    object: 'realtime.transcription_session',
    type: 'transcription',
    expires_at: 0,
    audio: {
      input: {
        format: FORMAT_GA[config.format.codec]!(config.format.rate),
        transcription: transcription(config),
        turn_detection: turnDetection(config),
        noise_reduction: null,
      },
    },
    include: [],
  };
}

/**
 * The events one output becomes (none for outputs the shape has no event for, and none for the outputs the
 * handler answers itself: updated, rejected, fatal, closed).
 */
export function formatOutput(shape: Shape, output: SessionOutput, state: OutputState): ServerEvent[] {
  if (shape === 'translation') return formatTranslation(output, state);
  switch (output.type) {
    case 'speech_started':
      return [{ type: 'input_audio_buffer.speech_started', item_id: output.itemId, audio_start_ms: output.audioStartMs }];
    case 'speech_stopped':
      return [{ type: 'input_audio_buffer.speech_stopped', item_id: output.itemId, audio_end_ms: output.audioEndMs }];
    case 'timeout_triggered':
      return [{ type: 'input_audio_buffer.timeout_triggered', item_id: output.itemId, audio_start_ms: output.audioStartMs, audio_end_ms: output.audioEndMs }];
    case 'committed':
      return [{ type: 'input_audio_buffer.committed', item_id: output.itemId, previous_item_id: output.previousItemId }];
    case 'cleared':
      return [{ type: 'input_audio_buffer.cleared' }];
    case 'delta':
      if (state.translating) return []; // the item's transcript will be its translation (see completed)
      return [{ type: 'conversation.item.input_audio_transcription.delta', item_id: output.itemId, content_index: 0, delta: output.delta }];
    case 'completed': {
      // A session whose language is a translation target delivers the translation as its transcript; the
      // Bambara one rides along as `source_transcript` (a Kuma field) and its deltas are not sent.
      const t = output.translation;
      const usage = t ? { type: 'duration', seconds: output.seconds, translation_characters: t.characters } : { type: 'duration', seconds: output.seconds };
      const completed = {
        type: 'conversation.item.input_audio_transcription.completed',
        item_id: output.itemId,
        content_index: 0,
        transcript: t ? t.text : output.transcript,
        usage,
        ...(t ? { source_transcript: output.transcript, language: t.language } : {}),
      };
      return t && t.text
        ? [{ type: 'conversation.item.input_audio_transcription.delta', item_id: output.itemId, content_index: 0, delta: t.text }, completed]
        : [completed];
    }
    case 'failed':
      return [failed(output)];
    case 'interims':
      return [interims(output)];
    default:
      return [];
  }
}

/** A Kuma event (OpenAI's protocol has none for it): interim text paused because the server is busy, or resumed. */
function interims(output: Extract<SessionOutput, { type: 'interims' }>): ServerEvent {
  return { type: 'session.interims', paused: output.paused, reason: output.paused ? 'server_busy' : null };
}

function failed(output: Extract<SessionOutput, { type: 'failed' }>): ServerEvent {
  return {
    type: 'conversation.item.input_audio_transcription.failed',
    item_id: output.itemId,
    content_index: 0,
    error: { type: 'server_error', code: output.error.code, message: output.error.message, param: null },
  };
}

function formatTranslation(output: SessionOutput, state: OutputState): ServerEvent[] {
  switch (output.type) {
    case 'delta': {
      // Deltas are append-only across the whole session: a turn's first one carries the space after the last turn.
      const delta = state.sourceSent && !output.delta.startsWith(' ') ? ` ${output.delta}` : output.delta;
      state.sourceSent = true;
      return [{ type: 'session.input_transcript.delta', item_id: output.itemId, delta }];
    }
    case 'completed': {
      const events: ServerEvent[] = [];
      const text = output.translation?.text ?? '';
      if (text) {
        events.push({ type: 'session.output_transcript.delta', item_id: output.itemId, delta: state.targetSent ? ` ${text}` : text });
        state.targetSent = true;
      }
      events.push({
        type: 'session.turn.completed',
        item_id: output.itemId,
        transcript: output.transcript,
        translation: text,
        language: output.translation?.language ?? null,
        usage: { type: 'duration', seconds: output.seconds, translation_characters: output.translation?.characters ?? 0 },
      });
      return events;
    }
    case 'failed':
      return [failed(output)];
    case 'interims':
      return [interims(output)];
    default:
      return [];
  }
}
