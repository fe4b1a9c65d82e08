/**
 * The bodies of the native transcribe routes (SPEC §4.7, §6; PROTOCOLS §6): segments `{text, start, end}` in
 * seconds, as one JSON array or as NDJSON (one object per line, `\n`-terminated) written as the engine
 * decides each segment; with `translate_to_french=true`, `{text}`: the French translation of the whole
 * transcript, or in a stream of the transcript so far.
 *
 * Billing is what the primary surface charges for the same work, settled once the last object has been
 * delivered (written to the network: the result's onDelivered): the seconds of decoded audio (as POST
 * /audio/transcriptions), plus with translation the characters of the final transcript (as POST
 * /audio/translations). The generators here fill in `charge.items` when they reach their end. A stream that
 * fails or that the client leaves before its end is charged nothing, as the primary surface's SSE transcription.
 *
 * Re-translation in a stream is bounded: each object re-translates the transcript so far (translation needs
 * the whole context), which would cost the square of the transcript's length. A new segment is re-translated
 * only while the characters this stream has re-translated, counting it, stay within RETRANSLATION_FACTOR
 * times the transcript so far; the segments in between are folded into the next object, and the last object
 * is always the complete transcript's translation. So a stream's translation work is at most
 * (RETRANSLATION_FACTOR + 1) times the final transcript, and only the final transcript is charged — the
 * interim objects are the cost of streaming, as a live caption's revisions are.
 */
import { z } from 'zod';
import type { CompatDeps } from '../compat/deps.js';
import type { TranscriptionJob } from '../compat/transcription-job.js';
import { holdTranslation, translateTranscript, translationItem, type SpeechTranslation } from '../compat/speech-translation.js';
import type { Segment } from '../compat/transcript.js';
import type { ApiRequest } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { ChargeItem } from '../../billing/ledger.js';

/** What a stream that reached its end is to be charged (null until then). */
export interface StreamCharge {
  items: readonly ChargeItem[] | null;
}

export const NDJSON = 'application/x-ndjson';

/** See the header: a stream's interim re-translations stay within this many times the transcript so far. */
export const RETRANSLATION_FACTOR = 4;

export const NativeSegmentSchema = z
  .object({ text: z.string(), start: z.number().meta({ description: 'seconds' }), end: z.number().meta({ description: 'seconds' }) })
  .meta({ id: 'NativeTranscriptionSegment' });
export const FrenchTranscriptionSchema = z.object({ text: z.string() }).meta({ id: 'FrenchTranscriptionResponse' });

type NativeSegment = z.output<typeof NativeSegmentSchema>;

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const encoder = new TextEncoder();

/** One NDJSON line. JSON.stringify never writes a bare newline, so each object stays on its line. */
export function ndjsonLine(value: unknown): Uint8Array {
  return encoder.encode(`${JSON.stringify(value)}\n`);
}

/** A decided segment as the native surface writes it; null for a segment without words (never sent). */
export function nativeSegment(segment: Segment): NativeSegment | null {
  const text = segment.text.trim();
  return text ? { text, start: round3(segment.start), end: round3(segment.end) } : null;
}

/** Segment lines as the engine decides them; the transcription is charged once the last one was delivered. */
export async function* segmentLines(job: TranscriptionJob, charge: StreamCharge): AsyncGenerator<Uint8Array> {
  for await (const segment of job.segments()) {
    const line = nativeSegment(segment);
    if (line) yield ndjsonLine(line);
  }
  charge.items = [job.item()];
}

/** Decides which segments of a stream are re-translated (see the header). */
export class RetranslationBudget {
  private spent = 0;

  constructor(private readonly factor = RETRANSLATION_FACTOR) {}

  /** Whether to re-translate a transcript of `characters` now; counted when it is. */
  take(characters: number): boolean {
    if (this.spent + characters > this.factor * characters) return false;
    this.spent += characters;
    return true;
  }
}

/**
 * `{text}` lines, each the French of the transcript so far, as segments are decided; the last one always
 * the complete transcript's. Before each translation runs, the hold is raised to what the stream would cost
 * if it ended there (the seconds up to the segment, the transcript's characters), so a balance that cannot
 * pay stops the stream before that translation is delivered.
 */
export async function* frenchLines(
  deps: CompatDeps,
  req: ApiRequest,
  caller: Caller,
  job: TranscriptionJob,
  plan: SpeechTranslation,
  charge: StreamCharge,
): AsyncGenerator<Uint8Array> {
  const budget = new RetranslationBudget();
  const texts: string[] = [];
  let coveredSegments = -1; // how many segments the last object translated (none sent yet)
  for await (const segment of job.segments()) {
    const decided = nativeSegment(segment);
    if (!decided) continue;
    texts.push(decided.text);
    const transcript = texts.join(' ');
    if (!budget.take([...transcript].length)) continue;
    await job.reservation.growTo(deps.ledger.costOfItems([job.itemAt(decided.end), translationItem(plan, transcript)]));
    yield ndjsonLine({ text: await translateTranscript(plan, transcript, req.signal, caller) });
    coveredSegments = texts.length;
  }
  const transcript = texts.join(' ');
  await holdTranslation(deps, job.reservation, job, plan, transcript);
  // An empty transcript still gets its (empty) object: the last object is always the whole translation.
  if (coveredSegments !== texts.length) yield ndjsonLine({ text: await translateTranscript(plan, transcript, req.signal, caller) });
  charge.items = [job.item(), translationItem(plan, transcript)];
}
