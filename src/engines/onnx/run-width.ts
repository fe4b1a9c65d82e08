/**
 * Adaptive run width: how many onnxruntime threads a model run takes, decided when it starts from the runs
 * of the big models going on in the whole process at that moment.
 *
 * Why: on a machine of N cores a lone run is fastest with N intra-op threads, but once several runs go on
 * at once, N one-thread replicas do more work per second than one N-thread replica (bench:threads,
 * wav2vec2-base on 2 cores: 1 × 2 threads runs a lone 3.5 s chunk in 324 ms and serves 11.0 audio-s/s
 * saturated; 2 × 1, 526 ms and 13.0). A fixed layout buys one figure with the other. So each replica of
 * such a model holds one session per width (1, 2, 4, … up to its threads; they share the mapped weights,
 * shared-weights.ts, so a width costs its threads and a few MB) and a run takes the widest that fits
 * `threads / runs going on`: alone, every core; beside others, a share.
 *
 * A wide run keeps its threads when others start, so a run started beside it oversubscribes the cores:
 * both slow down (wav2vec2-base, 20 sessions: finals p99 1.2–1.6 s). So a run that finds a wide run going
 * waits for it when, by its worker's estimates (the learned ms per input element of each width), the wide
 * run's rest plus this run wide is sooner than this run narrow; then, alone, it goes wide in turn, and if
 * others waited too, they go narrow together. A wide run due much later (a long upload's window) is not
 * waited for.
 *
 * And a run found alone goes narrow all the same while the models' recent load (core-time of runs over
 * the last LOAD_WINDOW_MS, as a share of the cores) is at least WIDE_MAX_LOAD — on a busy machine the next
 * run comes before a wide one would end — provided the narrow width does more work per core than the wide
 * one (measured, per model: true of wav2vec2-base on this machine, 0.65 against 0.72 core-s per 4 s; not of
 * XLS-R-300M, whose wide runs are the thriftier) and keeps the run under NARROW_MAX_MS (a narrow final that
 * long would miss a realtime caller's second on its own). Going wide whenever one found itself alone for a
 * moment made a busy machine's runs alternate between waiting and oversubscribing (wav2vec2-base, 20
 * sessions on 2 cores: finals p99 1.2–1.4 s), where runs side by side, one thread each, kept a steady p99
 * of 0.7 s. A lone caller's load stays far below the bar (≈ 0.3 with interims).
 *
 * The state lives in SharedArrayBuffers that the main thread gives every gated worker (replica-pool.ts),
 * so replicas of different models (speech recognition and translation) see each other's runs. Each worker
 * marks its own slot while it runs (a worker runs one model run at a time: runLock), and the pool clears
 * the slot when the worker exits: a worker killed mid-run must not leave its run counted for ever.
 */

/** Slots of the process's run count, one per gated worker; workers beyond them run uncounted at full width. */
export const RUN_GATE_SLOTS = 256;
/** Runs go wide only while the recent load is under this share of the cores… */
export const WIDE_MAX_LOAD = 0.6;
/** …unless a narrow run would take longer than this (the load rule's exception). */
export const NARROW_MAX_MS = 800;
/** The time constant of the recent load (an exponentially decayed sum of runs' core-time). */
export const LOAD_WINDOW_MS = 2000;

/** Shared state: [0] runs' wide-run generation (bumped when one ends, for Atomics.wait); [1] when the wide run going on is due to end (ms since the epoch, 0: none). */
const WIDE_GENERATION = 0;
const WIDE_DUE = 1;

/** A worker's view of the shared state: every worker's slot, which one is its own, and the wide run's. */
export interface RunGate {
  /** Int32Array over a SharedArrayBuffer: 1 while the worker of that slot runs a model. */
  readonly slots: Int32Array;
  readonly slot: number;
  /** Int32Array over a SharedArrayBuffer: the wide run's generation and due time (ms mod 2^31). */
  readonly wide: Int32Array;
  /** Int32Array over a SharedArrayBuffer: per slot, [when its load was stamped (ms mod 2^31), its decayed core-ms × 10]. */
  readonly load: Int32Array;
}

export function createRunSlots(): { slots: Int32Array; wide: Int32Array; load: Int32Array } {
  const ints = (n: number) => new Int32Array(new SharedArrayBuffer(4 * n));
  return { slots: ints(RUN_GATE_SLOTS), wide: ints(2), load: ints(2 * RUN_GATE_SLOTS) };
}

/** Clears a slot whose worker is gone (replica-pool.ts): its runs no longer count, nor its load. */
export function clearSlot(state: { slots: Int32Array; load: Int32Array }, slot: number): void {
  Atomics.store(state.slots, slot, 0);
  Atomics.store(state.load, 2 * slot, 0);
  Atomics.store(state.load, 2 * slot + 1, 0);
}

/** The models' recent load: core-ms of runs, decayed over LOAD_WINDOW_MS, as a share of `cores` cores. */
export function recentLoad(load: Int32Array, cores: number, now = clock()): number {
  let coreMs = 0;
  for (let i = 0; i < load.length; i += 2) {
    const value = Atomics.load(load, i + 1);
    if (value === 0) continue;
    coreMs += (value / 10) * Math.exp(-Math.max(0, until(now, Atomics.load(load, i))) / LOAD_WINDOW_MS);
  }
  return coreMs / (LOAD_WINDOW_MS * Math.max(1, cores));
}

/** Workers running a model now. */
export function runsGoingOn(slots: Int32Array): number {
  let n = 0;
  for (let i = 0; i < slots.length; i++) if (Atomics.load(slots, i) > 0) n++;
  return n;
}

/** The widths a replica of `threads` threads holds sessions for: powers of two below it, and itself. */
export function runWidths(threads: number): number[] {
  const widths: number[] = [];
  for (let w = 1; w < threads; w *= 2) widths.push(w);
  widths.push(Math.max(1, threads));
  return widths;
}

/** The widest of `widths` (ascending) that fits `threads` shared among `running` runs (this one included). */
export function widthFor(widths: readonly number[], threads: number, running: number): number {
  const share = Math.max(1, Math.floor(threads / Math.max(1, running)));
  let chosen = widths[0]!;
  for (const w of widths) if (w <= share) chosen = w;
  return chosen;
}

/** ms clock that fits an Int32Array slot (wraps every 24 days; differences stay right). */
const clock = () => Date.now() % 2 ** 31;
const until = (due: number, now: number) => ((due - now + 2 ** 31 + 2 ** 30) % 2 ** 31) - 2 ** 30;

/** How long the wide run going on has left by its worker's estimate (ms), or null when none is going. */
function wideRunLeft(wide: Int32Array): number | null {
  const due = Atomics.load(wide, WIDE_DUE);
  return due === 0 ? null : Math.max(0, until(due, clock()));
}

/** Blocks this worker until the wide run going on ends (a little past its due time at most: estimates are estimates). */
function awaitWideRun(wide: Int32Array, left: number): void {
  const generation = Atomics.load(wide, WIDE_GENERATION);
  if (Atomics.load(wide, WIDE_DUE) !== 0) Atomics.wait(wide, WIDE_GENERATION, generation, left + 50);
}

/**
 * What one model's runs cost, in ms per input element, by width (a moving average of its runs). One per
 * model session (session.ts): a worker may hold several (a whisper encoder and its decoder, a NeMo model
 * and its streaming step), whose costs differ by orders of magnitude.
 */
export type RunCosts = Map<number, number>;

/** A run of `size` elements at `width`, by the learned costs (an unlearned width: scaled from a learned one). */
function estimateMs(costs: RunCosts, width: number, size: number, widest: number): number {
  const known = costs.get(width);
  if (known !== undefined) return known * size;
  const wide = costs.get(widest);
  return wide === undefined ? 0 : wide * (widest / width) * size;
}

/** Whether `narrow` does more work per core than `widest` (what the load rule needs); unknown: assumed. */
function narrowIsThrifty(costs: RunCosts, narrow: number, widest: number): boolean {
  const [n, w] = [costs.get(narrow), costs.get(widest)];
  return n === undefined || w === undefined || n * narrow < w * widest;
}

/** Per worker: its own decayed core-ms, as last published in its load slot. */
let ownLoad = { at: 0, coreMs: 0 };

/** Adds a run's core-time to this worker's load slot. */
function publishLoad(gate: RunGate, coreMs: number): void {
  const now = clock();
  const decayed = ownLoad.coreMs * Math.exp(-Math.max(0, until(now, ownLoad.at)) / LOAD_WINDOW_MS);
  ownLoad = { at: now, coreMs: decayed + coreMs };
  Atomics.store(gate.load, 2 * gate.slot, now);
  Atomics.store(gate.load, 2 * gate.slot + 1, Math.min(2 ** 31 - 1, Math.round(ownLoad.coreMs * 10)));
}

/** One model run at a time per worker, so that a worker's slot says whether it is running. */
let runLock: Promise<void> = Promise.resolve();

/** The width for a run of `size` elements about to start (this worker's slot already marked). */
function chooseWidth(gate: RunGate, costs: RunCosts, widths: readonly number[], size: number): number {
  const widest = widths[widths.length - 1]!;
  const running = runsGoingOn(gate.slots);
  if (running > 1) return widthFor(widths, widest, running);
  // Alone on a busy machine, with a narrow width that does more per core and keeps this run short: the
  // next run is due before a wide one would end, so take the share of two.
  const narrow = widthFor(widths, widest, 2);
  const busy = recentLoad(gate.load, widest) >= WIDE_MAX_LOAD;
  return busy && narrowIsThrifty(costs, narrow, widest) && estimateMs(costs, narrow, size, widest) <= NARROW_MAX_MS ? narrow : widest;
}

/**
 * Runs `fn` with the width chosen for it, `size` being its input's element count (what its cost grows
 * with) and `costs` its model's learned costs, which the run updates. With no gate (an ungated worker) the
 * widest is used. While this worker waits for another worker's wide run it is blocked (Atomics.wait): for
 * at most that run's estimated rest, which is shorter than this run would have taken.
 */
export async function withRunWidth<T>(
  gate: RunGate | null,
  widths: readonly number[],
  size: number,
  costs: RunCosts,
  fn: (width: number) => Promise<T>,
): Promise<T> {
  const widest = widths[widths.length - 1]!;
  if (!gate) return fn(widest);
  const previous = runLock;
  let unlock!: () => void;
  runLock = new Promise<void>((resolve) => (unlock = resolve));
  await previous;
  let markedWide = false;
  try {
    // A wide run going on: wait for it when it would end and this run then run wide sooner than this run
    // would run narrow beside it.
    const left = widths.length > 1 ? wideRunLeft(gate.wide) : null;
    if (left !== null && left + estimateMs(costs, widest, size, widest) <= estimateMs(costs, widthFor(widths, widest, 2), size, widest))
      awaitWideRun(gate.wide, left);
    Atomics.store(gate.slots, gate.slot, 1);
    const width = widths.length > 1 ? chooseWidth(gate, costs, widths, size) : widest;
    if (width > 1 && width === widest && widths.length > 1 && costs.has(width)) {
      Atomics.store(gate.wide, WIDE_DUE, (clock() + Math.ceil(estimateMs(costs, width, size, widest))) % 2 ** 31 || 1);
      markedWide = true;
    }
    const started = performance.now();
    const result = await fn(width);
    const took = performance.now() - started;
    publishLoad(gate, took * width);
    const known = costs.get(width);
    const perElement = took / Math.max(1, size);
    costs.set(width, known === undefined ? perElement : known * 0.8 + perElement * 0.2);
    return result;
  } finally {
    Atomics.store(gate.slots, gate.slot, 0);
    if (markedWide) {
      Atomics.store(gate.wide, WIDE_DUE, 0);
      Atomics.add(gate.wide, WIDE_GENERATION, 1);
      Atomics.notify(gate.wide, WIDE_GENERATION);
    }
    unlock();
  }
}
