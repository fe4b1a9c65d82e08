/**
 * Transcripts in every response shape of SPEC §2.3 / PROTOCOLS §6–§7: plain text, json, verbose_json (real
 * segment times; tokens [] and the scoring fields 0, as the spec fixes them; with the `word` granularity, the
 * words with their times, as OpenAI gives them), srt, vtt, and the SSE events of a streamed transcription.
 */
import type { z } from 'zod';
import type { ApiResult, SseMessage } from '../types.js';
import { toSrt, toVtt } from '../../text/subtitles.js';
import { MEDIA_TYPES } from '../media-types.js';
import type {
  TranscriptionResponseSchema,
  TranscriptTextDeltaEventSchema,
  TranscriptTextDoneEventSchema,
  TranscriptTextSegmentEventSchema,
  VerboseTranscriptionSchema,
} from '../schemas/audio.js';

/** A word the model timed (CTC models time each word from the frames of its tokens). */
export interface TimedWord {
  text: string;
  start: number;
  end: number;
}

export interface Segment {
  start: number;
  end: number;
  text: string;
  /** The segment's words, joined by spaces its text; empty (or absent) when the model does not time words. */
  words?: TimedWord[];
}

export interface DurationUsage {
  type: 'duration';
  seconds: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function joinSegments(segments: Segment[]): string {
  return segments
    .map((s) => s.text.trim())
    .filter(Boolean)
    .join(' ');
}

/**
 * The words of a verbose transcript, `{word, start, end}` as OpenAI writes them, when every segment has its
 * words timed; undefined when a segment has none (a Whisper model: its timestamps are per segment), so a
 * client never gets words that leave part of the text out.
 */
function timedWords(segments: Segment[]): z.output<typeof VerboseTranscriptionSchema>['words'] {
  if (segments.some((s) => s.text.trim() && !s.words?.length)) return undefined;
  return segments.flatMap((s) => s.words ?? []).map((w) => ({ word: w.text, start: round3(w.start), end: round3(w.end) }));
}

export function transcriptResult(
  format: 'json' | 'text' | 'verbose_json' | 'srt' | 'vtt',
  segments: Segment[],
  info: { durationSeconds: number; usage: DurationUsage; task: 'transcribe' | 'translate'; words?: boolean },
): ApiResult {
  const text = joinSegments(segments);
  switch (format) {
    case 'json':
      return { kind: 'json', body: { text, usage: info.usage } satisfies z.output<typeof TranscriptionResponseSchema> };
    case 'text':
      return { kind: 'text', contentType: MEDIA_TYPES.plainText, body: text };
    case 'srt':
      return { kind: 'text', contentType: MEDIA_TYPES.plainText, body: toSrt(segments) };
    case 'vtt':
      return { kind: 'text', contentType: MEDIA_TYPES.vtt, body: toVtt(segments) };
    case 'verbose_json': {
      const words = info.words ? timedWords(segments) : undefined;
      return {
        kind: 'json',
        body: {
          task: info.task,
          language: 'bambara',
          duration: round3(info.durationSeconds),
          text,
          segments: segments.map((s, id) => ({
            id,
            seek: 0,
            start: round3(s.start),
            end: round3(s.end),
            text: s.text,
            tokens: [],
            temperature: 0,
            avg_logprob: 0,
            compression_ratio: 0,
            no_speech_prob: 0,
          })),
          ...(words ? { words } : {}),
          usage: info.usage,
        } satisfies z.output<typeof VerboseTranscriptionSchema>,
      };
    }
  }
}

/** The events of one decided segment: the segment itself, then its text as a delta. */
export function segmentEvents(segment: Segment, index: number): SseMessage[] {
  const text = segment.text.trim();
  const decided: z.output<typeof TranscriptTextSegmentEventSchema> = {
    type: 'transcript.text.segment',
    id: `seg_${index}`,
    start: round3(segment.start),
    end: round3(segment.end),
    text,
    speaker: 'A',
  };
  // Deltas concatenate to the final text: segments after the first carry their separating space.
  const delta: z.output<typeof TranscriptTextDeltaEventSchema> = { type: 'transcript.text.delta', delta: index === 0 ? text : ` ${text}` };
  return [{ data: JSON.stringify(decided) }, { data: JSON.stringify(delta) }];
}

export function doneEvents(text: string, usage: DurationUsage): SseMessage[] {
  const done: z.output<typeof TranscriptTextDoneEventSchema> = { type: 'transcript.text.done', text, usage };
  return [{ data: JSON.stringify(done) }, { data: '[DONE]' }];
}
