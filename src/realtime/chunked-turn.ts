/**
 * A turn recognised while it is spoken, for CTC models: the turn's audio is encoded in chunks as it arrives
 * (each chunk re-reads `left` seconds of context and reads `right` seconds ahead, and keeps only the frames
 * of its new audio), the frames' argmax classes are joined into the turn's CTC path, and interim deltas
 * come from that path — no model run is ever repeated for an interim. At the end of the turn only what is
 * not yet encoded is computed, so a final costs about one chunk, whatever the turn's length.
 *
 * Scheduling (streaming-options.ts): small chunks while the model has a free place, large ones once jobs
 * queue; one chunk in flight per turn; chunks mid-turn wait behind finals (`continuation` priority), so on a
 * saturated machine the callers who stopped speaking are served first and mid-turn encoding falls behind.
 * The final rewinds to frames that saw no audio past the turn's end (the end of a turn is decided after
 * some silence was already read ahead), then encodes the rest.
 *
 * Models whose runner streams statefully (convolutional NeMo models, info `stateful`: runner method
 * `stream`) are fed the new audio only, with no context re-read: the runner hands back the model's state
 * with each piece's frames, the turn keeps it and sends it with the next piece, and the frames are exactly
 * the whole turn's. Audio fed to a state cannot be taken back, so the last `holdbackSeconds` are kept back
 * until the end is known; a turn committed shorter than what was fed (a VAD silence longer than the
 * holdback), or whose state was lost with a failed piece, is encoded again from its start (exact too).
 */
import type { StreamingOptions } from '../engines/asr/streaming-options.js';
import { tokensFromIds, tokensToWords } from '../engines/asr/ctc-decode.js';
import type { SpeechModel } from './session-config.js';
import { TranscriptDeltas } from './transcript-deltas.js';
import { speechPart, type FinalLimits, type TurnRecognizer, type TurnAudio } from './turn-transcriber.js';
import type { SessionObserver } from './session-deps.js';

const RATE = 16_000;

/** What the realtime side needs to know of a CTC model (its runner's info). */
export interface CtcGeometry {
  /** Samples per output frame. */
  hop: number;
  frameSeconds: number;
  windowSeconds: number;
  /** Shorter audio produces no frame. */
  minSamples: number;
  /** Audio one model run may take (the runner's window). */
  maxRunSamples: number;
  minPauseSeconds: number;
  pieces: readonly string[];
  streaming: StreamingOptions;
  /** The runner streams this model statefully (method `stream`, exact frames). */
  stateful: boolean;
}

/** The geometry of a model whose runner encodes chunks (`frames`), or null (decode turns whole). */
export function ctcGeometry(model: SpeechModel): CtcGeometry | null {
  const info = model.engine.info as Record<string, unknown>;
  const streaming = info.streaming as StreamingOptions | undefined;
  if (!streaming || !Array.isArray(info.pieces) || typeof info.frameSeconds !== 'number') return null;
  return {
    hop: Math.round(info.frameSeconds * RATE),
    frameSeconds: info.frameSeconds,
    windowSeconds: Number(info.windowSeconds ?? info.frameSeconds),
    minSamples: Number(info.minSamples ?? 0),
    maxRunSamples: Math.round(Number(info.maxChunkSeconds ?? 30) * RATE),
    minPauseSeconds: Number(info.minPauseSeconds ?? 0.5),
    pieces: info.pieces as string[],
    streaming,
    stateful: info.stateful === true && streaming.stateful !== false,
  };
}

interface FramesResult {
  ids: Int32Array;
  frames: number;
  blank: number;
}

/** A stateful piece's answer (ctc-stream.ts): frames from `firstFrame`, and the state for the next piece. */
interface StreamResult {
  ids: Int32Array;
  firstFrame: number;
  blank: number;
  state: { features: { tail: Float64Array } };
}

/** Whether a state's buffers went to a worker and did not come back (the piece failed after it was sent). */
const isDetached = (state: StreamResult['state']) => state.features.tail.buffer.byteLength === 0;

export class ChunkedTurn implements TurnRecognizer {
  private readonly deltas = new TranscriptDeltas();
  /** Argmax class per encoded frame, from the turn's start. */
  private ids = new Int32Array(0);
  private blank = -1;
  /** Turn-relative sample up to which frames are encoded (a multiple of the hop). */
  private cursor = 0;
  private inFlight: Promise<void> | null = null;
  private readonly inFlightAbort = new AbortController();
  private finished = false;
  /** The final's deadline (performance.now()), passed to its jobs so a queue that cannot make it refuses them. */
  private deadlineAt: number | undefined;
  private readonly left: number;
  private readonly right: number;
  private readonly minStep: number;
  private readonly maxStep: number;
  /** Stateful models: the state after the audio fed so far (null: nothing fed), and how much was fed. */
  private state: StreamResult['state'] | null = null;
  private fed = 0;
  private stateLost = false;
  private readonly holdback: number;
  private readonly unlink: () => void;

  constructor(
    private readonly model: SpeechModel,
    private readonly geometry: CtcGeometry,
    private readonly account: string,
    private readonly signal: AbortSignal,
    private readonly onDelta: (delta: string) => void,
    /** Whether small, eager chunks may run now (the machine is not too busy); absent: always. */
    private readonly eagerAllowed: () => boolean = () => true,
    private readonly observer?: Pick<SessionObserver, 'chunk'>,
  ) {
    const { streaming, hop } = geometry;
    const toHops = (seconds: number) => Math.max(hop, Math.round((seconds * RATE) / hop) * hop);
    this.left = Math.round((streaming.leftSeconds * RATE) / hop) * hop;
    this.right = Math.round(streaming.rightSeconds * RATE);
    this.minStep = toHops(streaming.minChunkSeconds);
    this.maxStep = Math.min(toHops(streaming.chunkSeconds), Math.max(hop, geometry.maxRunSamples - (geometry.stateful ? 0 : this.left + this.right)));
    this.holdback = Math.round(streaming.holdbackSeconds * RATE);
    // The session's signal lives as long as the session: the turn lets go of it once it is over (cancel or
    // final), or a session would hold every turn it ever had.
    const onSessionGone = () => this.inFlightAbort.abort();
    signal.addEventListener('abort', onSessionGone, { once: true });
    this.unlink = () => signal.removeEventListener('abort', onSessionGone);
  }

  /** The turn's CTC path so far: the argmax class of each encoded frame. */
  get frameIds(): Int32Array {
    return this.ids;
  }

  /** Resolves once no chunk is in flight (a paced feeder waits on it, as real time would). */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  offer(heldSamples: number, audio: TurnAudio): void {
    if (this.finished || this.inFlight || this.stateLost) return;
    const pending = this.geometry.stateful ? heldSamples - this.fed - this.holdback : heldSamples - this.cursor - this.right;
    const { lanes, busy, queued } = this.model.engine.stats();
    const eager = queued === 0 && busy < lanes && this.eagerAllowed();
    if (pending < (eager ? this.minStep : this.maxStep)) return;
    // A turn that fell behind catches up in chunks as large as one model run allows.
    const step = Math.min(Math.floor(pending / this.geometry.hop) * this.geometry.hop, this.maxStep);
    this.observer?.chunk?.(step < this.maxStep ? 'eager' : 'full');
    if (this.geometry.stateful) return this.track(this.streamPiece(audio(this.fed, this.fed + step), false, 'continuation', this.inFlightAbort.signal));
    const from = Math.max(0, this.cursor - this.left);
    const job = this.encode(
      audio(from, this.cursor + step + this.right),
      (this.cursor - from) / this.geometry.hop,
      step / this.geometry.hop,
      'continuation',
      this.inFlightAbort.signal,
    ).then((result) => {
      if (!this.finished) this.append(result.ids);
    });
    this.track(job);
  }

  /** One mid-turn job in flight: interims when it lands; a refused (queue full) or failed one costs nothing. */
  private track(work: Promise<void>): void {
    const job = work
      .then(() => {
        if (!this.finished) this.emit(this.deltas.interim(this.text()));
      })
      .catch(() => {
        // The final encodes what is left (a stateful turn whose state went with the failed piece: all of it).
      })
      .finally(() => {
        if (this.inFlight === job) this.inFlight = null;
      });
    this.inFlight = job;
  }

  cancel(): void {
    this.finished = true;
    this.inFlightAbort.abort();
    this.unlink();
  }

  /**
   * Encodes what is left of the committed audio, sends the last delta and returns the transcript. `limits`
   * (default: the session's signal) cancel the final's jobs and refuse them when they cannot run in time.
   */
  async final(committed: Float32Array, limits?: FinalLimits): Promise<string> {
    try {
      return await this.finalOf(committed, limits);
    } finally {
      this.unlink();
    }
  }

  private async finalOf(committed: Float32Array, limits?: FinalLimits): Promise<string> {
    const signal = limits?.signal ?? this.signal;
    // The turn's ending silence is left unheard, except what a stateful stream was already fed (feeding less
    // than that would mean encoding the turn again from its start).
    const speech = speechPart(committed, limits);
    const samples = this.geometry.stateful && speech.length < this.fed ? committed.subarray(0, Math.min(committed.length, this.fed)) : speech;
    this.deadlineAt = limits?.deadlineAt;
    // A mid-turn chunk waiting in a queue (behind other callers' finals) is not waited for: the final encodes
    // its audio at its own priority. One running is awaited: its frames are part of the final. (Stateful
    // turns always wait: a cancelled piece would lose the state, and the whole turn be encoded again.)
    if (this.inFlight && !this.geometry.stateful && this.model.engine.stats().queued > 0) this.inFlightAbort.abort();
    await this.inFlight;
    this.finished = true;
    this.observer?.chunk?.('final');
    const { hop, streaming } = this.geometry;
    const end = samples.length;
    if (this.geometry.stateful) return this.finalStateful(samples, signal);
    const { lanes, busy, queued } = this.model.engine.stats();
    if (streaming.finalRedecodeSeconds > 0 && end <= streaming.finalRedecodeSeconds * RATE && queued === 0 && busy < lanes) {
      this.ids = new Int32Array(0);
      this.cursor = 0;
    }
    // Frames that read audio past the turn's end (lookahead into the silence after it) are encoded again.
    this.cursor = Math.max(0, Math.min(this.cursor, Math.floor((end - this.right) / hop) * hop));
    this.ids = this.ids.subarray(0, this.cursor / hop);
    while (this.cursor < end && end >= this.geometry.minSamples) {
      const from = Math.max(0, this.cursor - this.left);
      const last = end - from <= this.geometry.maxRunSamples;
      const step = last ? null : Math.floor((this.geometry.maxRunSamples - (this.cursor - from) - this.right) / hop);
      const to = last ? end : this.cursor + step! * hop + this.right;
      const result = await this.encode(samples.subarray(from, to), (this.cursor - from) / hop, step, 'opening', signal);
      this.append(result.ids);
      // The last chunk gave every frame there is (the audio's last few ms make none): nothing is left.
      if (last || result.ids.length === 0) break;
    }
    const transcript = this.text();
    this.emit(this.deltas.final(transcript));
    return transcript;
  }

  /** Feeds the rest of the committed audio to the state (or the whole turn to a new one), the last piece final. */
  private async finalStateful(samples: Float32Array, signal: AbortSignal): Promise<string> {
    if (this.stateLost || this.fed > samples.length) {
      // Audio past the turn's end is in the state (or the state is gone): encode the turn again from its start.
      this.state = null;
      this.fed = 0;
      this.ids = new Int32Array(0);
    }
    // A turn that fell behind is caught up in pieces of one model run; the last one ends the stream.
    const run = this.geometry.maxRunSamples;
    while (samples.length - this.fed > run) await this.streamPiece(samples.subarray(this.fed, this.fed + run), false, 'opening', signal);
    await this.streamPiece(samples.subarray(this.fed), true, 'opening', signal);
    const transcript = this.text();
    this.emit(this.deltas.final(transcript));
    return transcript;
  }

  private async streamPiece(samples: Float32Array, final: boolean, priority: 'opening' | 'continuation', signal: AbortSignal): Promise<void> {
    const sent = this.state;
    let result: StreamResult;
    try {
      // A copy of the audio (the engine may transfer its input to the worker); the state is not needed after
      // this piece succeeds, and if it was transferred and the piece failed, the final starts the turn again.
      result = await this.model.engine.run<StreamResult>('stream', { samples: samples.slice(), state: sent, final }, signal, this.job(priority));
    } catch (err) {
      if (sent && isDetached(sent)) this.stateLost = true;
      throw err;
    }
    if (result.firstFrame !== this.ids.length) throw new Error(`stream frames out of order: ${result.firstFrame} after ${this.ids.length}`);
    this.blank = result.blank;
    this.state = result.state;
    this.fed += samples.length;
    this.join(result.ids);
  }

  private async encode(
    samples: Float32Array,
    skip: number,
    take: number | null,
    priority: 'opening' | 'continuation',
    signal: AbortSignal,
  ): Promise<FramesResult> {
    // A copy: the engine transfers its input to the worker, which would detach a view of the session's buffer.
    const result = await this.model.engine.run<FramesResult>('frames', { samples: samples.slice(), skip, take }, signal, this.job(priority));
    this.blank = result.blank;
    return result;
  }

  private job(priority: 'opening' | 'continuation'): { account: string; priority: 'opening' | 'continuation'; deadlineMs?: number } {
    const deadlineMs = priority === 'opening' && this.deadlineAt !== undefined ? this.deadlineAt - performance.now() : undefined;
    return { account: this.account, priority, ...(deadlineMs !== undefined ? { deadlineMs } : {}) };
  }

  private append(ids: Int32Array): void {
    this.join(ids);
    this.cursor += ids.length * this.geometry.hop;
  }

  private join(ids: Int32Array): void {
    const joined = new Int32Array(this.ids.length + ids.length);
    joined.set(this.ids);
    joined.set(ids, this.ids.length);
    this.ids = joined;
  }

  private text(): string {
    const { frameSeconds, windowSeconds, minPauseSeconds, pieces } = this.geometry;
    const words = tokensToWords(tokensFromIds(this.ids, this.blank), pieces, { frameSeconds, windowSeconds, offsetSeconds: 0 }, minPauseSeconds);
    return words.map((w) => w.text).join(' ');
  }

  private emit(delta: string): void {
    if (delta) this.onDelta(delta);
  }
}
