/**
 * One decoder child process (decoder-child.ts) as DecoderPool sees it: messages in and out, its resident
 * memory, and why it died. The pool decides what to do about a death; this file only tells it what
 * happened.
 *
 * Memory has two limits, because a decoder can run away in two places:
 * - V8's heap (the JavaScript demuxers: a table of 4 billion entries), capped with
 *   `--max-old-space-size`; passing it aborts the child, which says so on stderr ("heap out of memory").
 * - Everything else: WASM decoder heaps and typed arrays live outside V8's heap limit, and a file can make
 *   them grow by gigabytes (an MP4 the decoder must take in one call, see the containment test). The pool
 *   samples the child's resident set (Linux: /proc/<pid>/status) and kills a child over its allowance with
 *   SIGKILL. RLIMIT_AS is not used: WASM reserves large virtual ranges it never touches, so an address-space
 *   limit refuses to start decoders that would have needed little real memory.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { spawnChild } from '../../threads/spawn-child.js';
import type { ChildReply, PoolToChild } from './decoder-child.js';

const CHILD_URL = new URL(`./decoder-child${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
const MiB = 1024 * 1024;
/** What we keep of the child's stderr: enough for V8's out-of-memory banner, bounded whatever it prints. */
const STDERR_TAIL_CHARS = 4096;

/** Why a child ended: it ran out of memory (killed by the pool, or V8's own abort) or crashed otherwise. */
export interface DecoderExit {
  reason: 'memory' | 'crashed';
  /** For logs and the pool's own errors; never shown to clients (it can hold paths and stack frames). */
  detail: string;
}

export interface DecoderProcessHandlers {
  message(reply: ChildReply): void;
  exit(exit: DecoderExit): void;
}

/** Resident set size of a process in bytes, or undefined where it cannot be read (not Linux, gone). */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export class DecoderProcess {
  private readonly child: ChildProcess;
  private stderrTail = '';
  private overLimit: string | null = null;
  private exited = false;
  private readonly gone: Promise<void>;

  constructor(
    private readonly heapMb: number,
    private readonly handlers: DecoderProcessHandlers,
  ) {
    this.child = spawnChild(CHILD_URL, { execArgv: [`--max-old-space-size=${heapMb}`] });
    this.child.stdout?.resume();
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (text: string) => (this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS)));
    this.child.on('message', (reply: ChildReply) => this.handlers.message(reply));
    // A failed send (channel closed while the child dies) or spawn: the exit that follows says what happened.
    this.child.on('error', () => this.kill());
    this.gone = new Promise((resolve) => this.child.once('exit', (code, signal) => (this.onExit(code, signal), resolve())));
    this.setBusy(false);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  send(message: PoolToChild): void {
    if (this.exited || !this.child.connected) return; // its exit is on the way; the pool fails its jobs then
    this.child.send(message, (error) => {
      if (error) this.kill();
    });
  }

  /** A busy child keeps the server's event loop alive; an idle one must not (a pool left open would hang exit). */
  setBusy(busy: boolean): void {
    const channel = this.child.channel as { ref?(): void; unref?(): void } | undefined;
    if (busy) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }

  /**
   * Kills the child when its resident memory is over `limitBytes` (then its exit reports 'memory').
   * Returns whether it did.
   */
  enforceMemory(limitBytes: number): boolean {
    if (this.exited || this.overLimit || this.child.pid === undefined) return false;
    const rss = residentBytes(this.child.pid);
    if (rss === undefined || rss <= limitBytes) return false;
    this.overLimit = `resident memory ${Math.round(rss / MiB)} MB passed the limit of ${Math.round(limitBytes / MiB)} MB`;
    this.child.kill('SIGKILL');
    return true;
  }

  /** Kills the child at once (a stuck step, the pool closing); resolves once it is gone. */
  kill(): Promise<void> {
    if (!this.exited) this.child.kill('SIGKILL');
    return this.gone;
  }

  /** Stops reporting to the pool (it has already accounted for this child), then kills it. */
  retire(): Promise<void> {
    this.child.removeAllListeners('message');
    this.handlers.exit = () => {};
    return this.kill();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    const heap = /heap out of memory|Reached heap limit|Allocation failed/i.test(this.stderrTail);
    if (this.overLimit) this.handlers.exit({ reason: 'memory', detail: `decoder process killed: ${this.overLimit}` });
    else if (heap) this.handlers.exit({ reason: 'memory', detail: `decoder process ran out of its ${this.heapMb} MB JavaScript heap (${how})` });
    else
      this.handlers.exit({
        reason: 'crashed',
        detail: `decoder process exited with ${how}${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-1)[0]}` : ''}`,
      });
  }
}
