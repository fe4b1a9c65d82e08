/**
 * The primary of KUMA_WORKERS server processes on one machine. It serves nothing itself: it prepares what
 * must happen once (models generated, store migrated, first-start keys), starts the workers, restarts one
 * that dies, and on SIGHUP replaces them one at a time.
 *
 * Sharing the port: every worker's uWS app listens on the same port with SO_REUSEPORT (uSockets sets it
 * on every listening socket), and the kernel spreads new connections across them by a hash of the
 * connection's addresses. uWS.js has no way to take over a socket accepted by another process, so a
 * primary that accepts and hands sockets over (Node's cluster round-robin) is not available for its
 * HTTP port; Node net servers (the AudioSocket listener) do go through cluster's round-robin.
 * load-tests/scale measures how evenly the kernel spreads the load.
 *
 * Rolling restart (SIGHUP): for each worker in turn, a new one is started on the port and, once its
 * models are warm, the old one is told SIGTERM: it stops listening (the kernel sends new connections to
 * the others), finishes its requests and realtime sessions within KUMA_SHUTDOWN_GRACE_MS, and exits.
 * Capacity never drops below N workers' worth. A new worker that fails to become ready stops the roll
 * and the old one stays.
 */
import cluster, { type Worker } from 'node:cluster';
import net from 'node:net';
import type { Config } from '../config/config.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { ensureModelFiles } from '../server.js';
import { openStore } from '../store/open-store.js';
import { announceReadiness, ensureFirstStartKeys, printBanner } from './first-start.js';
import { isWorkerMessage, WORKER_INDEX_ENV, type WorkerMessage } from './messages.js';

/** A new worker must be listening, and warm, within this (a worker listens once its models are loaded and warm). */
const READY_TIMEOUT_MS = 300_000;
/** A worker that dies is restarted after a pause that doubles while it keeps dying young (crash loops). */
const RESTART_DELAY_MS = { first: 1000, max: 30_000, youngMs: 10_000 };

interface Slot {
  index: number;
  worker: Worker;
  /** Its first `ready` or `not-ready` (listened for from the fork on, so the message cannot be missed). */
  readiness: Promise<WorkerMessage | 'exit' | 'timeout'>;
  startedAt: number;
  /** Told to stop by the primary: its exit is expected, not restarted. */
  retiring: boolean;
}

export async function runPrimary(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  // Once, before any worker: N workers racing to generate models, migrate the store or create the dev
  // account would each do it.
  await ensureModelFiles(config);
  const store = await openStore(config);
  const keys = await ensureFirstStartKeys(store, config).finally(() => store.close());

  const supervisor = new WorkerSupervisor(config, logger);
  const port = await supervisor.start();
  printBanner(port, config, keys, config.workers);
  announceReadiness(port, config, supervisor.firstReady());

  process.on('SIGHUP', () => void supervisor.rollingRestart());
  const stop = (signal: string) => {
    logger.info({ signal }, 'primary: stopping the workers');
    supervisor.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

export class WorkerSupervisor {
  private readonly slots = new Map<number, Slot>();
  private port = 0;
  private stopping = false;
  private rolling: Promise<void> | null = null;
  private restartDelay = new Map<number, number>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  /** Starts every worker; resolves with the port they share once all listen. */
  async start(): Promise<number> {
    // Port 0 is picked here, once: a port the kernel hands out for 0 is not shared through SO_REUSEPORT,
    // so each worker asking for 0 would get a port of its own.
    this.port = this.config.port || (await freePort(this.config.host));
    const listening = [];
    for (let index = 1; index <= this.config.workers; index++) listening.push(this.waitListening(this.fork(index, this.port)));
    await Promise.all(listening);
    return this.port;
  }

  /** Resolves once every first-generation worker has its models warm; rejects with the first that has not. */
  async firstReady(): Promise<void> {
    const outcomes = await Promise.all([...this.slots.values()].map(async (slot) => [slot.index, await slot.readiness] as const));
    for (const [index, outcome] of outcomes) {
      if (typeof outcome === 'string') throw new Error(`worker ${index} did not become ready (${outcome})`);
      if (outcome.kuma === 'not-ready') throw new Error(`worker ${index}: ${outcome.reason}`);
    }
  }

  /** Replaces every worker, one at a time (SIGHUP). A second SIGHUP during a roll is ignored. */
  rollingRestart(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (this.rolling) {
      this.logger.warn('primary: SIGHUP during a rolling restart, ignored');
      return this.rolling;
    }
    this.rolling = this.roll().finally(() => (this.rolling = null));
    return this.rolling;
  }

  /** SIGTERM to every worker, and waits for them (SIGKILL for any still there after the grace period). */
  async stop(): Promise<void> {
    this.stopping = true;
    const limitMs = this.config.drainDelayMs + this.config.shutdownGraceMs + 5000;
    await Promise.all([...this.slots.values()].map((slot) => this.retire(slot, limitMs)));
  }

  private async roll(): Promise<void> {
    this.logger.info({ workers: this.slots.size }, 'primary: rolling restart');
    for (const index of [...this.slots.keys()].sort((a, b) => a - b)) {
      if (this.stopping) return;
      const old = this.slots.get(index);
      const fresh = this.fork(index, this.port, { replacing: true });
      const outcome = await this.waitReady(fresh.worker);
      if (outcome !== 'ready') {
        this.logger.error({ worker: index, outcome }, 'primary: the new worker did not become ready; the rolling restart stops and the old worker stays');
        fresh.retiring = true;
        fresh.worker.process.kill('SIGKILL');
        return;
      }
      this.slots.set(index, fresh);
      if (old) await this.retire(old, this.config.drainDelayMs + this.config.shutdownGraceMs + 5000);
    }
    this.logger.info('primary: rolling restart done');
  }

  private fork(index: number, port: number, options: { replacing?: boolean } = {}): Slot {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index), KUMA_PORT: String(port) });
    const slot: Slot = { index, worker, readiness: nextMessage(worker, ['ready', 'not-ready'], READY_TIMEOUT_MS), startedAt: Date.now(), retiring: false };
    if (!options.replacing) this.slots.set(index, slot);
    this.logger.info({ worker: index, pid: worker.process.pid }, 'primary: worker started');
    worker.on('exit', (code, signal) => this.onExit(slot, code, signal));
    return slot;
  }

  private onExit(slot: Slot, code: number | null, signal: string | null): void {
    if (slot.retiring || this.stopping || this.slots.get(slot.index) !== slot) return;
    const lived = Date.now() - slot.startedAt;
    const previous = this.restartDelay.get(slot.index) ?? 0;
    const delay = lived < RESTART_DELAY_MS.youngMs ? Math.min(Math.max(previous * 2, RESTART_DELAY_MS.first), RESTART_DELAY_MS.max) : RESTART_DELAY_MS.first;
    this.restartDelay.set(slot.index, delay);
    this.logger.error({ worker: slot.index, pid: slot.worker.process.pid, code, signal, restartInMs: delay }, 'primary: worker died; restarting it');
    setTimeout(() => {
      if (!this.stopping && this.slots.get(slot.index) === slot) this.fork(slot.index, this.port);
    }, delay);
  }

  private async retire(slot: Slot, limitMs: number): Promise<void> {
    slot.retiring = true;
    const { worker } = slot;
    if (worker.isDead()) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.process.kill('SIGTERM');
    const timer = setTimeout(() => {
      this.logger.warn({ worker: slot.index, pid: worker.process.pid }, 'primary: worker still running after the grace period; killed');
      worker.process.kill('SIGKILL');
    }, limitMs);
    await exited;
    clearTimeout(timer);
  }

  private async waitListening(slot: Slot): Promise<void> {
    const message = await nextMessage(slot.worker, ['listening'], READY_TIMEOUT_MS);
    if (typeof message === 'string') throw new Error(`worker ${slot.index} did not start listening (${message}); see its log above`);
  }

  private async waitReady(worker: Worker): Promise<'ready' | 'not-ready' | 'exit' | 'timeout'> {
    const message = await nextMessage(worker, ['ready', 'not-ready'], READY_TIMEOUT_MS);
    return typeof message === 'string' ? message : message.kuma === 'ready' ? 'ready' : 'not-ready';
  }
}

/** The worker's next message of one of `kinds`, or 'exit' if it dies first, or 'timeout'. */
function nextMessage(worker: Worker, kinds: WorkerMessage['kuma'][], timeoutMs: number): Promise<WorkerMessage | 'exit' | 'timeout'> {
  return new Promise((resolve) => {
    const done = (outcome: WorkerMessage | 'exit' | 'timeout') => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(outcome);
    };
    const onMessage = (message: unknown) => {
      if (isWorkerMessage(message) && kinds.includes(message.kuma)) done(message);
    };
    const onExit = () => done('exit');
    const timer = setTimeout(() => done('timeout'), timeoutMs);
    worker.on('message', onMessage);
    worker.on('exit', onExit);
  });
}

/** A port free on `host` now (the kernel's pick, released at once for the workers to take). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
