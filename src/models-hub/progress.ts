/**
 * Download progress on stderr. On a terminal: one line redrawn in place (bar, percent, bytes, rate, ETA,
 * current file). Elsewhere (logs, CI, pipes): plain lines, one when a file starts and ends and one every few
 * seconds for long files, so a log shows progress without thousands of carriage returns.
 */
import { formatBytes } from './hub-errors.js';

export interface ProgressSink {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const REDRAW_MS = 100;
const PLAIN_EVERY_MS = 5000;
const RATE_WINDOW_MS = 5000;

const formatDuration = (seconds: number) =>
  !Number.isFinite(seconds)
    ? '--'
    : seconds < 60
      ? `${Math.ceil(seconds)}s`
      : seconds < 3600
        ? `${Math.floor(seconds / 60)}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s`
        : `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;

export class PullProgress {
  private doneBytes = 0;
  private fileIndex = 0;
  private file = '';
  private fileSize = 0;
  private fileDone = 0;
  private lastDraw = 0;
  private lastPlain = 0;
  private samples: Array<{ at: number; bytes: number }> = [];
  private lineOpen = false;
  private readonly tty: boolean;

  constructor(
    private readonly sink: ProgressSink | null,
    private readonly totalBytes: number,
    private readonly totalFiles: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tty = Boolean(sink?.isTTY);
  }

  /** A plain message (clears the progress line first on a terminal). */
  log(text: string): void {
    if (!this.sink) return;
    this.clearLine();
    this.sink.write(`${text}\n`);
  }

  beginFile(file: string, size: number): void {
    this.fileIndex++;
    this.file = file;
    this.fileSize = size;
    this.fileDone = 0;
    this.lastPlain = this.now();
    if (!this.tty) this.log(`[${this.fileIndex}/${this.totalFiles}] ${file} (${formatBytes(size)})`);
    this.draw(true);
  }

  /** Bytes that were already there (a resumed .partial): they count toward the total, not the rate. */
  resumed(bytes: number): void {
    this.fileDone += bytes;
    this.doneBytes += bytes;
    if (!this.tty && bytes > 0) this.log(`  resuming at ${formatBytes(bytes)}`);
    this.draw(true);
  }

  advance(bytes: number): void {
    this.fileDone += bytes;
    this.doneBytes += bytes;
    const at = this.now();
    this.samples.push({ at, bytes: this.doneBytes });
    while (this.samples.length > 2 && this.samples[0]!.at < at - RATE_WINDOW_MS) this.samples.shift();
    if (this.tty) this.draw(false);
    else if (at - this.lastPlain >= PLAIN_EVERY_MS) {
      this.lastPlain = at;
      this.log(
        `  ${this.fileSize ? Math.floor((100 * this.fileDone) / this.fileSize) : 100}% ${formatBytes(this.fileDone)} of ${formatBytes(this.fileSize)}, ${formatBytes(this.rate())}/s`,
      );
    }
  }

  /** The bytes of this file written so far are thrown away (the server ignored a Range, or a retry starts over). */
  discard(): void {
    this.doneBytes -= this.fileDone;
    this.fileDone = 0;
    this.samples = [];
    this.draw(true);
  }

  note(text: string): void {
    this.log(`  ${text}`);
    this.draw(true);
  }

  endFile(outcome: 'downloaded' | 'up to date'): void {
    if (outcome === 'up to date') {
      this.doneBytes += this.fileSize - this.fileDone;
      this.fileDone = this.fileSize;
    }
    if (!this.tty) this.log(`  ${outcome}`);
    this.draw(true);
  }

  finish(summary: string): void {
    this.log(summary);
  }

  private rate(): number {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.at === first.at) return 0;
    return ((last.bytes - first.bytes) * 1000) / (last.at - first.at);
  }

  private draw(force: boolean): void {
    if (!this.sink || !this.tty) return;
    const at = this.now();
    if (!force && at - this.lastDraw < REDRAW_MS) return;
    this.lastDraw = at;
    const fraction = this.totalBytes ? Math.min(1, this.doneBytes / this.totalBytes) : 1;
    const rate = this.rate();
    const eta = rate > 0 ? (this.totalBytes - this.doneBytes) / rate : Infinity;
    const columns = this.sink.columns ?? 80;
    const numbers = `${formatBytes(this.doneBytes)}/${formatBytes(this.totalBytes)} ${formatBytes(rate)}/s ETA ${formatDuration(eta)} [${this.fileIndex}/${this.totalFiles}]`;
    const name = this.file.length > 32 ? `…${this.file.slice(-31)}` : this.file;
    // The bar takes what the line has left (the file name is worth more than bar width on a narrow terminal).
    const width = Math.min(30, columns - 1 - 6 - numbers.length - 1 - name.length - 1);
    const filled = Math.round(fraction * Math.max(width, 0));
    const bar = width >= 5 ? `${'█'.repeat(filled)}${'░'.repeat(width - filled)} ` : '';
    const stats = `${String(Math.floor(fraction * 100)).padStart(3)}% ${bar}${numbers}`;
    this.sink.write(`\r${`${stats} ${name}`.slice(0, columns - 1)}\x1b[K`);
    this.lineOpen = true;
  }

  private clearLine(): void {
    if (this.tty && this.lineOpen && this.sink) {
      this.sink.write('\r\x1b[K');
      this.lineOpen = false;
    }
  }
}
