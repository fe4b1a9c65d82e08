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
 * A wide run keeps its threads when others start, so a run started beside it would oversubscribe the
 * cores: both slow down, and the narrow one takes longer than waiting would have (wav2vec2-base, 20
 * sessions: finals p99 1.2–1.6 s). So a run that finds a wide run going, due to end within WIDE_WAIT_MS
 * (its worker's estimate from the input's size), waits for it; then, alone, it goes wide in turn, and if
 * others waited too, they all go narrow together. A wide run due to end later (a long upload's window)
 * is not waited for.
 *
 * And a run found alone only goes wide while the models' recent load (core-time of runs over the last
 * LOAD_WINDOW_MS, as a share of the cores) is under WIDE_MAX_LOAD. On a busy machine the next run comes
 * before a wide one ends; going wide whenever one found itself alone for a moment made runs alternate
 * between waiting for each other and oversubscribing (wav2vec2-base, 20 sessions on 2 cores: finals p99
 * 1.2–1.4 s), where runs side by side, one thread each, kept a steady p99 of 0.7 s. A lone caller's load
 * stays far below it (≈ 0.3 with interims).
 *
 * The state lives in SharedArrayBuffers that the main thread gives every gated worker (replica-pool.ts),
 * so replicas of different models (speech recognition and translation) see each other's runs. Each worker
 * marks its own slot while it runs (a worker runs one model run at a time: runLock), and the pool clears
 * the slot when the worker exits: a worker killed mid-run must not leave its run counted for ever.
 */

/** Slots of the process's run count, one per gated worker; workers beyond them run uncounted at full width. */
export const RUN_GATE_SLOTS = 256;
/** The longest a run waits for a wide run to end rather than start beside it. */
export const WIDE_WAIT_MS = 500;
/** Runs go wide only while the recent load is under this share of the cores. */
export const WIDE_MAX_LOAD = 0.6;
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

/** Blocks this worker until the wide run going on ends, if it is due within WIDE_WAIT_MS. */
function awaitWideRun(wide: Int32Array): void {
  const due = Atomics.load(wide, WIDE_DUE);
  if (due === 0) return;
  const left = until(due, clock());
  if (left > WIDE_WAIT_MS) return;
  const generation = Atomics.load(wide, WIDE_GENERATION);
  // A little past its due time: estimates are estimates; then this run starts regardless.
  Atomics.wait(wide, WIDE_GENERATION, generation, Math.max(0, left) + 50);
}

/** Per worker: the expected ms per input element of a run, by width (a moving average of its runs). */
const costs = new Map<number, number>();
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

/**
 * Runs `fn` with the width chosen for it, `size` being its input's element count (for the estimate of
 * when a wide run ends). With no gate (an ungated worker) the widest is used.
 */
export async function withRunWidth<T>(gate: RunGate | null, widths: readonly number[], size: number, fn: (width: number) => Promise<T>): Promise<T> {
  const widest = widths[widths.length - 1]!;
  if (!gate) return fn(widest);
  const previous = runLock;
  let unlock!: () => void;
  runLock = new Promise<void>((resolve) => (unlock = resolve));
  await previous;
  let markedWide = false;
  try {
    if (widths.length > 1) awaitWideRun(gate.wide);
    Atomics.store(gate.slots, gate.slot, 1);
    const running = runsGoingOn(gate.slots);
    // Alone on a busy machine: the next run is due before a wide one would end, so take the share of two.
    const sharers = running === 1 && recentLoad(gate.load, widest) >= WIDE_MAX_LOAD ? 2 : running;
    const width = widths.length > 1 ? widthFor(widths, widest, sharers) : widest;
    if (width > 1 && width === widest && widths.length > 1) {
      const perElement = costs.get(width);
      Atomics.store(gate.wide, WIDE_DUE, perElement === undefined ? 0 : (clock() + Math.ceil(perElement * size)) % 2 ** 31 || 1);
      markedWide = true;
    }
    const started = performance.now();
    const result = await fn(width);
    const took = performance.now() - started;
    publishLoad(gate, took * width);
    const perElement = took / Math.max(1, size);
    const known = costs.get(width);
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
