/**
 * The VadService of realtime sessions: every session's channel cuts its 16 kHz audio into 512-sample
 * windows, and a tick sends the pending windows of ALL channels to the `vad` model engine as ONE job
 * (silero-batch.ts runs them with a batch dimension), then hands each channel its probabilities in window
 * order. Why: one Silero run per window per session costs ≈0.14 ms plus a worker round trip; one batched run
 * per tick costs ≈0.055 ms per window and one round trip for everyone (measured, see load-tests/realtime/vad.ts).
 *
 * Rules:
 *   - A tick runs at most every `tickMs` (default 32 ms, one window), only while windows are pending (the
 *     timer is unref'd and not re-armed when idle). A window that completes after an idle spell is sent at
 *     once; under load windows gather for up to one tick.
 *   - One job in flight at a time: the next tick waits for it (windows pile up meanwhile and go together).
 *   - A channel sends at most MAX_WINDOWS_PER_TICK windows per job, so a client that appends a minute of audio
 *     at once does not hold everyone else's scores behind its 1,875 windows.
 *   - The job's priority is `continuation` under one account of its own: the `vad` engine serves only this
 *     scheduler, and a continuation is never refused by admission control (these sessions were admitted).
 *   - A channel closed while its windows are in the job gets nothing back; an engine failure calls `onError`
 *     once on every open channel of that job, and those channels are done (the contract: no scores follow).
 *   - Energy gate (silero-batch.ts): the worker skips windows below the floor after a quiet window the model
 *     already called silence. Default floor −60 dBFS (see DEFAULT_ENERGY_FLOOR_DBFS); `null` turns it off.
 *   - `rate` (KUMA_VAD_RATE): 16000 scores the windows as they are; 8000 has the worker decimate them and run
 *     Silero's 8 kHz mode (cheaper per window; see silero-batch.ts). Channels take 16 kHz audio either way and
 *     windows keep their 32 ms, so the contract does not change.
 */
import type { JobOptions } from '../../engines/runtime/model-engine.js';
import {
  DEFAULT_GATE_FLOOR_DBFS,
  VAD_STATE,
  VAD_WINDOW,
  dbfsToRms,
  vadGeometry,
  type VadBatch,
  type VadBatchResult,
  type VadGeometry,
  type VadRate,
} from '../../engines/vad/silero-batch.js';
import type { VadChannel, VadService } from './contract.js';

/** The energy gate's default floor: silero-batch.ts says why −60 dBFS. */
export const DEFAULT_ENERGY_FLOOR_DBFS = DEFAULT_GATE_FLOOR_DBFS;
export const DEFAULT_TICK_MS = 32;
/** 0.5 s of audio per channel per job. */
export const MAX_WINDOWS_PER_TICK = 16;

/** What the scheduler needs from a ModelEngine (the `vad` model). */
export interface VadEngine {
  run<T>(method: string, input: unknown, signal?: AbortSignal, options?: JobOptions): Promise<T>;
}

export interface VadSchedulerOptions {
  tickMs?: number;
  /** Energy floor in dBFS, or null for no gate. */
  energyFloorDbfs?: number | null;
  /** Largest batch per model run; 1 = the unbatched baseline (benchmarks only). */
  maxRows?: number;
  /** The rate Silero scores at (default 16000). */
  rate?: VadRate;
}

export interface VadSchedulerStats {
  channels: number;
  ticks: number;
  jobs: number;
  modelWindows: number;
  gatedWindows: number;
}

const JOB_OPTIONS: JobOptions = { account: 'realtime-vad', priority: 'continuation' };

type OnScores = (firstWindow: number, probabilities: Float32Array) => void;
type OnError = (err: Error) => void;

class Channel implements VadChannel {
  /** Index of the first window not yet sent to the model. */
  nextWindow = 0;
  closed = false;
  readonly state = new Float32Array(VAD_STATE);
  readonly context: Float32Array;
  /** At 8 kHz: the worker's decimator memory. */
  readonly history: Float32Array;
  lastProb = 0;
  quiet = 0;
  /**
   * Samples not yet sent, oldest first: the full windows, then the start of the next. One array per channel,
   * grown when needed and compacted as windows leave, so a 20 ms frame costs a copy and no allocation.
   */
  private samples = new Float32Array(VAD_WINDOW * 4);
  private filled = 0;

  constructor(
    private readonly scheduler: VadScheduler,
    geometry: VadGeometry,
    readonly onScores: OnScores,
    readonly onError: OnError,
  ) {
    this.context = new Float32Array(geometry.context);
    this.history = new Float32Array(geometry.history);
  }

  /** Full windows waiting to be sent. */
  get pendingWindows(): number {
    return Math.floor(this.filled / VAD_WINDOW);
  }

  push(samples: Float32Array): void {
    if (this.closed || samples.length === 0) return;
    const before = this.pendingWindows;
    if (this.filled + samples.length > this.samples.length) {
      const grown = new Float32Array(Math.max(this.samples.length * 2, this.filled + samples.length));
      grown.set(this.samples.subarray(0, this.filled));
      this.samples = grown;
    }
    this.samples.set(samples, this.filled);
    this.filled += samples.length;
    if (this.pendingWindows > before) this.scheduler.windowsPending();
  }

  /** Copies the first `count` full windows into `into` at `offset` and drops them from the channel. */
  takeWindows(count: number, into: Float32Array, offset: number): void {
    const n = count * VAD_WINDOW;
    into.set(this.samples.subarray(0, n), offset);
    this.samples.copyWithin(0, n, this.filled);
    this.filled -= n;
    this.nextWindow += count;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.filled = 0;
    this.scheduler.forget(this);
  }

  /** Ends the channel with an error: onError once, nothing after. */
  fail(err: Error): void {
    if (this.closed) return;
    this.close();
    try {
      this.onError(err);
    } catch {
      // A throwing handler must not keep the other channels of the job from hearing, nor reject the tick.
    }
  }
}

/** One channel's share of a job. */
interface Share {
  channel: Channel;
  firstWindow: number;
  count: number;
}

export class VadScheduler implements VadService {
  private readonly channels = new Set<Channel>();
  private readonly tickMs: number;
  private readonly floorRms: number;
  private readonly maxRows: number | undefined;
  private readonly rate: VadRate;
  private readonly geometry: VadGeometry;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private lastTickAt = -Infinity;
  private closed = false;
  private readonly counters = { ticks: 0, jobs: 0, modelWindows: 0, gatedWindows: 0 };

  constructor(
    private readonly engine: VadEngine,
    options: VadSchedulerOptions = {},
  ) {
    this.tickMs = options.tickMs ?? DEFAULT_TICK_MS;
    const floor = options.energyFloorDbfs === undefined ? DEFAULT_ENERGY_FLOOR_DBFS : options.energyFloorDbfs;
    this.floorRms = floor === null ? 0 : dbfsToRms(floor);
    this.maxRows = options.maxRows;
    this.rate = options.rate ?? 16000;
    this.geometry = vadGeometry(this.rate);
  }

  open(onScores: OnScores, onError: OnError): VadChannel {
    const channel = new Channel(this, this.geometry, onScores, onError);
    if (this.closed) channel.closed = true;
    else this.channels.add(channel);
    return channel;
  }

  stats(): VadSchedulerStats {
    return { channels: this.channels.size, ...this.counters };
  }

  /** Stops ticking and waits for the job in flight; no callback follows. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const channel of [...this.channels]) channel.close();
    await this.inFlight;
  }

  /** @internal A channel has full windows: arm a tick unless one is armed or a job is running. */
  windowsPending(): void {
    if (this.timer || this.inFlight || this.closed) return;
    const delay = Math.max(0, this.lastTickAt + this.tickMs - performance.now());
    this.timer = setTimeout(() => this.tick(), delay);
    this.timer.unref();
  }

  /** Whether some channel has a full window waiting (checked after every job: no array copy of the channels). */
  private anyPending(): boolean {
    for (const channel of this.channels) if (channel.pendingWindows > 0) return true;
    return false;
  }

  /** @internal */
  forget(channel: Channel): void {
    this.channels.delete(channel);
  }

  private tick(): void {
    this.timer = null;
    this.lastTickAt = performance.now();
    this.counters.ticks++;
    const shares: Share[] = [];
    for (const channel of this.channels) {
      const waiting = channel.pendingWindows;
      if (waiting === 0) continue;
      const count = Math.min(waiting, MAX_WINDOWS_PER_TICK);
      shares.push({ channel, firstWindow: channel.nextWindow, count });
    }
    if (shares.length === 0) return;
    const batch = this.build(shares);
    this.counters.jobs++;
    this.inFlight = this.engine
      .run<VadBatchResult>('scoreBatch', batch, undefined, JOB_OPTIONS)
      .then(
        (result) => this.deliver(shares, result),
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          for (const { channel } of shares) channel.fail(error);
        },
      )
      .finally(() => {
        this.inFlight = null;
        if (!this.closed && this.anyPending()) this.windowsPending();
      });
  }

  /** Moves each share's windows out of its channel into one job. */
  private build(shares: Share[]): VadBatch {
    const c = shares.length;
    const { context, history } = this.geometry;
    const counts = new Int32Array(c);
    let total = 0;
    for (let i = 0; i < c; i++) total += counts[i] = shares[i]!.count;
    const batch: VadBatch = {
      counts,
      states: new Float32Array(c * VAD_STATE),
      contexts: new Float32Array(c * context),
      ...(history ? { histories: new Float32Array(c * history) } : {}),
      lastProbs: new Float32Array(c),
      quiet: new Uint8Array(c),
      samples: new Float32Array(total * VAD_WINDOW),
      floorRms: this.floorRms,
      ...(this.maxRows ? { maxRows: this.maxRows } : {}),
      ...(this.rate !== 16000 ? { rate: this.rate } : {}),
    };
    let window = 0;
    shares.forEach(({ channel, count }, i) => {
      batch.states.set(channel.state, i * VAD_STATE);
      batch.contexts.set(channel.context, i * context);
      batch.histories?.set(channel.history, i * history);
      batch.lastProbs[i] = channel.lastProb;
      batch.quiet[i] = channel.quiet;
      channel.takeWindows(count, batch.samples, window * VAD_WINDOW);
      window += count;
    });
    return batch;
  }

  private deliver(shares: Share[], result: VadBatchResult): void {
    const { context, history } = this.geometry;
    this.counters.modelWindows += result.modelWindows;
    this.counters.gatedWindows += result.gatedWindows;
    let offset = 0;
    shares.forEach(({ channel, firstWindow, count }, i) => {
      const probabilities = result.probabilities.slice(offset, offset + count);
      offset += count;
      if (channel.closed) return;
      channel.state.set(result.states.subarray(i * VAD_STATE, (i + 1) * VAD_STATE));
      channel.context.set(result.contexts.subarray(i * context, (i + 1) * context));
      if (history) channel.history.set(result.histories!.subarray(i * history, (i + 1) * history));
      channel.lastProb = result.lastProbs[i]!;
      channel.quiet = result.quiet[i]!;
      try {
        channel.onScores(firstWindow, probabilities);
      } catch (err) {
        // A session's callback bug ends that session's scoring, not everyone's.
        channel.fail(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }
}
