/**
 * Transcribes one turn: interim decodes of the growing audio while it is spoken, at a bounded rate and only
 * when the speech engine has a free place (they are a courtesy; the final decode is what a caller waits
 * for and must not queue behind them), then the final decode of the committed audio at `opening` priority.
 * Deltas go out through `onDelta` as TranscriptDeltas decides them.
 */
import type { SpeechModel } from './session-config.js';
import { normalizeTranscript, TranscriptDeltas } from './transcript-deltas.js';

/** New speech between two interim decodes: 0.6 s (a few words), so a 500-session load re-decodes ≤ 2×/s each. */
export const INTERIM_STEP_SAMPLES = 9_600;

interface DecodedSegment {
  text: string;
}

/** The turn's audio from `from` to `to` (samples from the turn's start, 16 kHz), as a copy. */
export type TurnAudio = (from: number, to: number) => Float32Array;

/** An item's bounds: its work is cancelled by `signal`, and is worth nothing after `deadlineAt` (performance.now()). */
export interface FinalLimits {
  signal: AbortSignal;
  deadlineAt: number;
  /**
   * The committed audio past this many samples is the silence that ended a VAD turn: a recogniser may leave
   * it unheard (the transcript and the bill still cover the whole item). Absent: hear it all.
   */
  speechSamples?: number;
}

/** The part of a turn's committed audio a recogniser needs to hear (FinalLimits.speechSamples). */
export function speechPart(samples: Float32Array, limits?: FinalLimits): Float32Array {
  const n = limits?.speechSamples;
  return n === undefined || n >= samples.length ? samples : samples.subarray(0, Math.max(0, n));
}

/** What a realtime session asks of a turn's recogniser: interims as audio comes, then the final. */
export interface TurnRecognizer {
  /** The turn's audio grew to `heldSamples`: start work if it is due. */
  offer(heldSamples: number, audio: TurnAudio): void;
  /** The turn was cleared, or its item is over: no more deltas, and nothing of the session held. */
  cancel(): void;
  /** The final transcript of the committed audio (sends the last delta), within the item's limits. */
  final(samples: Float32Array, limits?: FinalLimits): Promise<string>;
}

/** Decodes the whole turn for its interims and its final (models whose runner cannot encode chunks: Whisper). */
export class TurnTranscriber implements TurnRecognizer {
  private readonly deltas = new TranscriptDeltas();
  private interimAt = 0;
  private interimJob: AbortController | null = null;
  private finished = false;

  constructor(
    private readonly model: SpeechModel,
    private readonly account: string,
    private readonly signal: AbortSignal,
    private readonly onDelta: (delta: string) => void,
    /** Whether an interim decode may start now (the machine is not too busy); absent: always. */
    private readonly interimAllowed: () => boolean = () => true,
  ) {}

  /**
   * Called as the turn's audio grows (`heldSamples` of it so far). Starts an interim decode of the audio
   * when enough new speech came in since the last one, none is running and the engine is not busy.
   */
  offer(heldSamples: number, audio: TurnAudio): void {
    if (this.finished || this.interimJob || heldSamples - this.interimAt < INTERIM_STEP_SAMPLES) return;
    const { lanes, busy, queued } = this.model.engine.stats();
    if (queued > 0 || busy >= lanes || !this.interimAllowed()) return;
    this.interimAt = heldSamples;
    const job = new AbortController();
    this.interimJob = job;
    const onAbort = () => job.abort();
    this.signal.addEventListener('abort', onAbort, { once: true });
    this.decode(audio(0, heldSamples), 'continuation', job.signal)
      .then((text) => {
        if (!this.finished && !job.signal.aborted) this.emit(this.deltas.interim(text));
      })
      .catch(() => {
        // An interim decode that fails or is cancelled costs nothing: the final decode will tell.
      })
      .finally(() => {
        this.signal.removeEventListener('abort', onAbort);
        if (this.interimJob === job) this.interimJob = null;
      });
  }

  /** Stops interim decoding (the turn was cleared). */
  cancel(): void {
    this.finished = true;
    this.interimJob?.abort();
  }

  /** The final decode of the committed audio; sends what is left as a last delta and returns the transcript. */
  async final(samples: Float32Array, limits?: FinalLimits): Promise<string> {
    this.cancel();
    const transcript = normalizeTranscript(await this.decode(speechPart(samples, limits), 'opening', limits?.signal ?? this.signal, limits?.deadlineAt));
    this.emit(this.deltas.final(transcript));
    return transcript;
  }

  private async decode(samples: Float32Array, priority: 'opening' | 'continuation', signal: AbortSignal, deadlineAt?: number): Promise<string> {
    if (samples.length === 0) return '';
    const parts: string[] = [];
    const job = { account: this.account, priority, ...(deadlineAt !== undefined ? { deadlineMs: deadlineAt - performance.now() } : {}) };
    for await (const segment of this.model.engine.stream<DecodedSegment>('transcribe', { samples }, signal, undefined, job)) parts.push(segment.text);
    return normalizeTranscript(parts.join(' '));
  }

  private emit(delta: string): void {
    if (delta) this.onDelta(delta);
  }
}
