/**
 * Starts programs (ffmpeg) from a small helper process instead of from the server itself.
 *
 * Why: Node starts a program with fork + exec, and fork copies the parent's page tables, so its cost grows
 * with the parent's resident memory. The server holds its models (≈ 630 MB resident with the demo models
 * alone): one spawn there blocked the event loop for ≈ 20 ms (≈ 11 ms at 360 MB, 35 ms at 1.1 GB, 1 ms
 * at 50 MB — measured here), every request that needed a fresh ffmpeg paid it, and a burst of 50 such
 * requests stalled every connection for about a second. The helper (spawner-child.ts) is ≈ 45 MB, so its
 * spawns cost about a millisecond of *its* time, none of the server's: it sends each program's pipes back
 * over the IPC channel (the kernel passes the file descriptors), and the server reads and writes them as
 * if it had started the program. Measured: 10 spawns at 680 MB resident, event-loop lag 2.9 ms at most.
 *
 * One helper per server process, started on first use. If it dies, the programs it started are killed
 * (their exits could no longer be reported) and the next spawn starts a new helper.
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { spawnChild } from './spawn-child.js';

export type SpawnerRequest = { type: 'spawn'; id: number; command: string; args: string[] };
export type SpawnerReply =
  | { type: 'stdio'; id: number; fd: 0 | 1 | 2 }
  | { type: 'spawned'; id: number; pid: number }
  | { type: 'error'; id: number; message: string }
  | { type: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

export interface ProcessPipes {
  stdin: Socket;
  stdout: Socket;
  stderr: Socket;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const CHILD_URL = new URL(`./spawner-child${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** A program started by the helper, seen from the server. */
export class RemoteProcess {
  /** Resolves with the program's pipes once it runs; rejects if it could not be started (e.g. ENOENT). */
  readonly started: Promise<ProcessPipes>;
  /** Resolves once the program exited and its output pipes closed (never rejects). */
  readonly exited: Promise<ProcessExit>;
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private pipes: Partial<ProcessPipes> = {};
  private resolveStarted!: (pipes: ProcessPipes) => void;
  private rejectStarted!: (error: Error) => void;
  private resolveExit!: (exit: ProcessExit) => void;
  private over = false;
  private referenced = true;
  private killOnStart: NodeJS.Signals | undefined;

  constructor(private readonly onRefChange: (delta: number) => void) {
    this.started = new Promise((resolve, reject) => ((this.resolveStarted = resolve), (this.rejectStarted = reject)));
    this.started.catch(() => {}); // observed by whoever awaits it
    const exit = new Promise<ProcessExit>((resolve) => (this.resolveExit = resolve));
    this.exited = exit.then(async (how) => {
      // Like ChildProcess 'close': the output still in the pipes is read before the exit is reported.
      const open = [this.pipes.stdout, this.pipes.stderr].filter((s): s is Socket => !!s && !s.destroyed && !s.readableEnded);
      await Promise.all(open.map((s) => new Promise<void>((done) => s.once('close', () => done()))));
      return how;
    });
    onRefChange(+1);
  }

  /**
   * SIGKILL by default; nothing once the program has exited (its pid may belong to another by then). Asked
   * before the program has started, the signal is sent as soon as it has.
   */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.over) return;
    if (this.pid === undefined) {
      this.killOnStart = signal;
      return;
    }
    try {
      process.kill(this.pid, signal);
    } catch {
      // ESRCH: it exited a moment ago; the exit report is on its way.
    }
  }

  /** Whether this program keeps the server's event loop alive (an idle pooled program must not). */
  setRef(ref: boolean): void {
    if (ref === this.referenced) return;
    this.referenced = ref;
    if (!this.over) this.onRefChange(ref ? +1 : -1);
    for (const pipe of Object.values(this.pipes))
      if (ref) pipe.ref();
      else pipe.unref();
  }

  /** @internal the spawner's replies for this program. */
  handle(reply: SpawnerReply, socket: Socket | undefined): void {
    if (reply.type === 'stdio' && socket) {
      if (!this.referenced) socket.unref();
      this.pipes[(['stdin', 'stdout', 'stderr'] as const)[reply.fd]] = socket;
    } else if (reply.type === 'spawned') {
      this.pid = reply.pid;
      if (this.killOnStart) this.kill(this.killOnStart);
      const { stdin, stdout, stderr } = this.pipes;
      if (stdin && stdout && stderr) this.resolveStarted({ stdin, stdout, stderr });
      else this.fail(new Error('the process spawner did not pass on all three pipes'));
    } else if (reply.type === 'error') {
      this.fail(new Error(reply.message));
    } else if (reply.type === 'exit') {
      this.end({ code: reply.code, signal: reply.signal });
    }
  }

  /** @internal the helper died: the program can no longer be watched, so it is stopped. */
  orphaned(): void {
    this.kill('SIGKILL');
    this.fail(new Error('the process spawner exited'));
    this.end({ code: null, signal: 'SIGKILL' });
  }

  private fail(error: Error): void {
    this.rejectStarted(error);
    if (this.pid === undefined) this.end({ code: null, signal: null });
  }

  private end(exit: ProcessExit): void {
    if (this.over) return;
    this.over = true;
    this.exitCode = exit.code;
    this.signalCode = exit.signal;
    if (this.referenced) this.onRefChange(-1);
    this.resolveExit(exit);
  }
}

export class ProcessSpawner {
  private helper: ChildProcess | undefined;
  private readonly running = new Map<number, RemoteProcess>();
  private nextId = 1;
  /** Programs that keep the event loop alive; the helper's channel is referenced while there are any. */
  private referenced = 0;

  spawn(command: string, args: readonly string[]): RemoteProcess {
    const helper = this.ensureHelper();
    const id = this.nextId++;
    const proc = new RemoteProcess((delta) => this.changeRefs(delta));
    this.running.set(id, proc);
    void proc.exited.then(() => this.running.delete(id));
    helper.send({ type: 'spawn', id, command, args: [...args] } satisfies SpawnerRequest, (error) => {
      if (error) proc.orphaned();
    });
    return proc;
  }

  /** The helper's pid while it runs (diagnostics, tests). */
  get helperPid(): number | undefined {
    return this.helper?.pid;
  }

  /** Stops the helper (server shutdown); programs it started are killed. */
  close(): void {
    const helper = this.helper;
    this.helper = undefined;
    helper?.kill('SIGKILL');
  }

  private ensureHelper(): ChildProcess {
    if (this.helper && this.helper.connected) return this.helper;
    const helper = spawnChild(CHILD_URL, { output: 'inherit' });
    helper.on('message', (reply: SpawnerReply, socket: Socket | undefined) => this.running.get(reply.id)?.handle(reply, socket));
    helper.on('error', () => helper.kill('SIGKILL'));
    helper.once('exit', () => {
      if (this.helper === helper) this.helper = undefined;
      for (const proc of [...this.running.values()]) proc.orphaned();
    });
    this.helper = helper;
    this.applyRef();
    return helper;
  }

  private changeRefs(delta: number): void {
    this.referenced += delta;
    this.applyRef();
  }

  private applyRef(): void {
    const helper = this.helper;
    if (!helper) return;
    const channel = helper.channel as { ref?(): void; unref?(): void } | undefined;
    if (this.referenced > 0) {
      helper.ref();
      channel?.ref?.();
    } else {
      helper.unref();
      channel?.unref?.();
    }
  }
}

let shared: ProcessSpawner | undefined;

/** The process-wide spawner. */
export function sharedProcessSpawner(): ProcessSpawner {
  return (shared ??= new ProcessSpawner());
}
