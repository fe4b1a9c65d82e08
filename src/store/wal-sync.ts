/**
 * Group commit for the SQLite store: makes committed transactions durable without blocking the I/O thread.
 *
 * With `synchronous = FULL` every COMMIT fsyncs the WAL file on the calling thread — the server's only
 * I/O thread. Measured in a CPU profile of bench:tts (50 clients, 90 req/s): 3.1 s of 20.6 s of that
 * thread's time inside SQLite transactions, ≈ 1 ms per commit, two commits per request (the hold before
 * synthesis and the charge after it). A burst of 50 requests queued 50 fsyncs in front of the first audio.
 *
 * Instead the connection runs with `synchronous = NORMAL` (a COMMIT writes the WAL file without syncing
 * it: durable against a crash of the process, not yet against a power cut), and a write that a client is
 * told about waits for sync(), which fdatasyncs the WAL in libuv's thread pool before the store's promise
 * resolves. So a usage row is on disk before the response that reports it — the guarantee FULL gave —
 * and one fdatasync covers every commit made before it started, however many requests are waiting.
 * fdatasync acts on the file, whichever descriptor names it; SQLite itself syncs the WAL before a
 * checkpoint copies it into the database, and the database after.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

const fdatasync = promisify(fs.fdatasync);

export class WalSync {
  private fd: number | undefined;
  /** The fdatasync in progress, if any. */
  private running: Promise<void> | undefined;
  /** The one that will start when `running` ends, shared by every caller that arrived meanwhile. */
  private next: Promise<void> | undefined;
  private closed = false;

  /** `walFile` is the database's `-wal` file (WAL journal mode); `syncFile` is for tests. */
  constructor(
    private readonly walFile: string,
    private readonly syncFile: (fd: number) => Promise<void> = fdatasync,
  ) {}

  /** Resolves once every transaction committed before this call is on disk. */
  sync(): Promise<void> {
    if (this.closed) return Promise.resolve();
    // A sync already running may have started before the caller's commit reached the file: it does not
    // count. The caller waits for the next one, which starts as soon as the running one ends.
    if (!this.running) return this.start();
    this.next ??= this.running.then(
      () => this.startNext(),
      () => this.startNext(),
    );
    return this.next;
  }

  close(): void {
    this.closed = true;
    if (this.fd !== undefined) fs.close(this.fd, () => {});
    this.fd = undefined;
  }

  private startNext(): Promise<void> {
    this.next = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    const run = this.syncOnce().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async syncOnce(): Promise<void> {
    if (this.closed) return;
    // Opened on first use: SQLite creates the -wal file with the first write in WAL mode.
    this.fd ??= fs.openSync(this.walFile, 'r');
    await this.syncFile(this.fd);
  }
}
