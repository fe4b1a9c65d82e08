/**
 * One ffmpeg process encoding s16le mono 24 kHz PCM (stdin) to ADTS AAC-LC (stdout) for the `aac` and
 * `fmp4` formats (no AAC encoder exists on npm), one stream after another (see "Streams back to back").
 *
 * Why these ffmpeg arguments (measured on the bundled static ffmpeg 4.1, see the tests):
 * - `-probesize 32 -analyzeduration 0`: without them ffmpeg reads ≈1.9 s of input before encoding anything.
 * - NOT `-fflags +nobuffer`: it makes ffmpeg drop the packets read while probing (the first 1024 samples
 *   of speech vanish, the stream comes out one frame short).
 * - `-ar 25600` + `asetrate=24000`: the raw PCM demuxer cuts stdin into packets of sample_rate/25 samples
 *   and blocks until a packet is full. At 24000 that is 960 samples, which holds the first frame back to
 *   2880 input samples and makes output lag by up to one packet. Declaring 25600 Hz gives 1024-sample
 *   packets, aligned with AAC frames; `asetrate` only relabels the rate (no resampling — the ADTS output
 *   is byte-identical). Frames then appear exactly when the encoder can produce them: after n ≥ 2048
 *   input samples, floor(n / 1024) − 1 frames (one frame of priming plus one of lookahead).
 * - `-flush_packets 1`: write each ADTS frame to the pipe at once instead of filling an I/O buffer.
 * - `-aac_coder fast`: the bundled 4.1 build's default, named because newer builds (Debian's 5.1, a
 *   possible `KUMA_FFMPEG_PATH`) default to `twoloop`, which cost 3–4× the CPU here for speech.
 * - `-q:a 0.7 -aac_tns 0 -aac_pns 0`: VBR at a fixed quality, chosen on cost and on how much speech
 *   survives, both measured by `npm run bench:aac-settings` (load-tests/RESULTS.md). In ABR mode
 *   (`-b:a`) the encoder re-quantizes frames to steer towards the bitrate, which is most of its work —
 *   641–840 M instructions per 10 s of the demo voice, ffmpeg alone at ≈60× real time here — and it
 *   still overshoots (48k gave 73 kbit/s on short sentences). VBR costs ≈260 M at any quality. Survival:
 *   demo-voice sentences encoded, decoded and transcribed by the demo ASR, which hears any smearing of
 *   its formants: q 0.7 without temporal noise shaping and noise substitution keeps 40/40 exact at
 *   ≈44 kbit/s, like MP3 at 48k; ABR 48k with both kept 37/40, q 0.6 32/40. TNS caused most losses.
 *
 * Pre-roll: ffmpeg sets up its demuxer, filter graph and encoder only when the first packet arrives, which
 * took 4–65 ms per process here — on the first chunk's path. So a new process is fed 2048 samples of
 * silence at once: it initialises while idle and emits its first frame. The first two frames
 * are dropped, after which the stream is laid out exactly like a fresh one (the last silent frame takes
 * the place of the priming frame; AAC-LC frames depend on nothing before them but the overlap, which is
 * silence either way), and the frame schedule above is unchanged.
 *
 * Streams back to back: starting and initialising an ffmpeg costs far more CPU than encoding a sentence,
 * so a process serves stream after stream. Frame i of a process covers input samples [(i−1)·1024, i·1024)
 * and comes out once (i+2)·1024 samples are in (measured above). A stream of n samples that starts at a
 * frame boundary S, with at least two silent frames before it, owns frames S/1024 … S/1024 + ⌈n/1024⌉:
 * the same ⌈n/1024⌉ + 1 frames that ffmpeg writes for it at end of input (measured for n = 1 … 24000).
 * So instead of closing stdin, the end of a stream writes silence up to S' = (S + ⌈n/1024⌉·1024) + 2048:
 * that brings out the stream's last frame, and leaves the process exactly as the pre-roll leaves a new
 * one — at a frame boundary after two silent frames — for the next stream, which starts at S' (the frame
 * in between, silence, is dropped). Silence is what ffmpeg pads with at end of input, so a stream's
 * frames decode the same either way.
 */

import os from 'node:os';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { sharedProcessSpawner, type ProcessPipes, type ProcessSpawner, type RemoteProcess } from '../../threads/process-spawner.js';
import { AdtsParser } from './adts.js';

/** ffmpeg's VBR quality for `aac` and `fmp4` (≈44–47 kbit/s for speech); see the header comment. */
export const AAC_VBR_QUALITY = '0.7';
/** See the header comment: the rate the demuxer is told, chosen for its 1024-sample packets. */
const DEMUX_RATE = 25600;

export const FFMPEG_AAC_ARGS: readonly string[] = Object.freeze([
  '-hide_banner',
  '-nostdin',
  '-nostats',
  '-loglevel',
  'error',
  '-probesize',
  '32',
  '-analyzeduration',
  '0',
  '-f',
  's16le',
  '-ar',
  String(DEMUX_RATE),
  '-ac',
  '1',
  '-i',
  'pipe:0',
  '-af',
  'asetrate=24000',
  '-c:a',
  'aac',
  '-aac_coder',
  'fast',
  '-aac_tns',
  '0',
  '-aac_pns',
  '0',
  '-q:a',
  AAC_VBR_QUALITY,
  '-f',
  'adts',
  '-flush_packets',
  '1',
  'pipe:1',
]);

/** The configured ffmpeg (KUMA_FFMPEG_PATH), else the static binary shipped inside the @ffmpeg-installer npm package. */
export function resolveFfmpegPath(configured = ''): string {
  if (configured) return configured;
  const require = createRequire(import.meta.url);
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

const STDERR_TAIL_BYTES = 4096;
const FRAME = 1024;
/** Silent samples written to every new process (two AAC frames: the least that makes ffmpeg emit one). */
const PRE_ROLL_SAMPLES = 2 * FRAME;

/**
 * One ffmpeg child with the bookkeeping every user needs: spawn outcome, exit, stderr tail, event-loop refs,
 * and its stdout cut into ADTS frames with the pre-roll frames removed. Started through the process
 * spawner (threads/process-spawner.ts): a spawn from the server itself would block its event loop for
 * ≈ 20 ms, the cost of forking a process that holds the models.
 */
export class FfmpegProcess {
  private readonly remote: RemoteProcess;
  /** Resolves once the OS started the process; rejects if it could not be started (e.g. ENOENT). */
  readonly spawned: Promise<void>;
  /** Resolves after the process exited and its pipes closed (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves (and sets isWarmed) once ffmpeg has initialised — its first pre-roll frame arrived — or exited. */
  readonly warmed: Promise<void>;
  isWarmed = false;
  spawnError: Error | undefined;
  /** Streams begun on this process (a pooled process serves several, one after another). */
  streams = 0;
  private pipes: ProcessPipes | undefined;
  private stderr = '';
  private readonly parser = new AdtsParser();
  /** Samples written since the start, pre-roll and padding included. */
  private written = PRE_ROLL_SAMPLES;
  /** Frames received since the start. */
  private received = 0;
  /** Index of the current stream's first frame: frames before it (pre-roll, padding) are dropped. */
  private streamStart = PRE_ROLL_SAMPLES / FRAME;
  private pending: Uint8Array[] = [];
  private consumer: ((frames: Uint8Array[]) => void) | undefined;
  private frameWaiter: (() => void) | undefined;

  constructor(
    readonly ffmpegPath: string,
    spawner: ProcessSpawner = sharedProcessSpawner(),
  ) {
    this.remote = spawner.spawn(ffmpegPath, FFMPEG_AAC_ARGS);
    let warmedResolve!: () => void;
    this.warmed = new Promise<void>((resolve) => (warmedResolve = resolve)).then(() => {
      this.isWarmed = true;
    });
    this.exited = this.remote.exited;
    void this.exited.then(warmedResolve);
    this.spawned = this.remote.started.then(
      (pipes) => this.attach(pipes, warmedResolve),
      (error: Error) => {
        this.spawnError ??= new Error(`cannot start ffmpeg (${ffmpegPath}): ${error.message}`);
        throw this.spawnError;
      },
    );
    this.spawned.catch(() => {}); // observed through `spawnError` / by whoever awaits it
  }

  /** ffmpeg's stdin; only once `spawned` has resolved. */
  get stdin(): Socket {
    if (!this.pipes) throw new Error('ffmpeg is not running yet');
    return this.pipes.stdin;
  }

  /**
   * Starts a stream on this process: its frames (and nothing before them) go to `consumer`, starting
   * with any that already arrived.
   */
  beginStream(consumer: (frames: Uint8Array[]) => void): void {
    this.streams++;
    this.consumer = consumer;
    const pending = this.pending;
    this.pending = [];
    if (pending.length > 0) consumer(pending);
  }

  /** Writes s16le PCM of the current stream; false when the pipe is full (wait for stdin's 'drain'). */
  write(bytes: Uint8Array): boolean {
    this.written += bytes.length / 2;
    return this.stdin.write(bytes);
  }

  /**
   * Ends the current stream without ending the process: writes the silence that brings out its last
   * frame and leaves the process ready for another stream (see "Streams back to back"), then waits for
   * that frame. Resolves true once every frame of the stream went to its consumer; false if the process
   * exited or gave nothing for `idleMs` (it is then of no further use).
   */
  async endStream(idleMs: number): Promise<boolean> {
    const boundary = Math.ceil(this.written / FRAME) * FRAME + PRE_ROLL_SAMPLES;
    const lastFrame = boundary / FRAME - 2; // the stream's last frame: out once `boundary` samples are in
    const padding = Buffer.alloc((boundary - this.written) * 2);
    this.written = boundary;
    this.stdin.write(padding);
    while (this.received <= lastFrame) {
      if (!this.alive) return false;
      const progressed = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), idleMs);
        this.frameWaiter = () => {
          clearTimeout(timer);
          resolve(true);
        };
        void this.exited.then(() => this.frameWaiter?.());
      });
      this.frameWaiter = undefined;
      if (!progressed) return false;
    }
    this.streamStart = boundary / FRAME;
    this.consumer = undefined;
    return this.alive;
  }

  get pid(): number | undefined {
    return this.remote.pid;
  }

  get exitCode(): number | null {
    return this.remote.exitCode;
  }

  get signalCode(): NodeJS.Signals | null {
    return this.remote.signalCode;
  }

  get alive(): boolean {
    return this.spawnError === undefined && this.remote.exitCode === null && this.remote.signalCode === null;
  }

  /**
   * Lowers the process's CPU priority (raises its niceness) once its stream has delivered its first audio.
   * Encoding the rest of a stream can wait a few milliseconds; a stream that has not started is silence, and
   * its first frame needs the TTS replicas (niceness 10) and a fresh ffmpeg (niceness 0) first. The OS
   * shares CPU in proportion to priority, so continuations slow down under load but never stop.
   * Best effort: a platform that refuses leaves the priority as it was.
   */
  deprioritize(niceness: number): void {
    if (this.pid === undefined || !this.alive || !FfmpegProcess.priorityRestorable) return;
    try {
      os.setPriority(this.pid, niceness);
      this.deprioritized = true;
    } catch {
      // EPERM/ESRCH (the process just exited, or a sandbox forbids it): nothing to do.
    }
  }

  /**
   * Back to normal priority for the next stream. Lowering a niceness needs a privilege (CAP_SYS_NICE or
   * RLIMIT_NICE) that a deployment may not grant: where it fails, false — the process cannot be reused
   * — and no process is deprioritized from then on, since serving streams back to back saves more.
   */
  restorePriority(): boolean {
    if (!this.deprioritized || this.pid === undefined) return true;
    try {
      os.setPriority(this.pid, 0);
      this.deprioritized = false;
      return true;
    } catch {
      FfmpegProcess.priorityRestorable = false;
      return false;
    }
  }

  /** Cleared the first time restoring a priority fails (see restorePriority). */
  static priorityRestorable = true;
  private deprioritized = false;

  stderrTail(): string {
    return this.stderr.trim();
  }

  /** An idle pooled process must not keep Node running; an in-use one belongs to a live request. */
  setRef(ref: boolean): void {
    this.remote.setRef(ref);
  }

  kill(): void {
    if (this.alive) this.remote.kill('SIGKILL');
  }

  private attach(pipes: ProcessPipes, warmedResolve: () => void): void {
    this.pipes = pipes;
    pipes.stderr.setEncoding('utf8');
    pipes.stderr.on('data', (text: string) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL_BYTES);
    });
    pipes.stderr.on('error', () => {});
    pipes.stdout.on('error', () => {});
    // Writing to a process that died raises EPIPE on stdin; the exit status is what reports the failure.
    pipes.stdin.on('error', () => {});
    pipes.stdout.on('data', (chunk: Buffer) => {
      const parsed = this.parser.push(chunk);
      if (parsed.length === 0) return;
      warmedResolve();
      const first = this.received;
      this.received += parsed.length;
      // Frames before the current stream's first (pre-roll, the silence between streams) are dropped.
      const frames = first >= this.streamStart ? parsed : parsed.slice(Math.min(parsed.length, this.streamStart - first));
      if (frames.length > 0) {
        if (this.consumer) this.consumer(frames);
        else this.pending.push(...frames);
      }
      this.frameWaiter?.();
    });
    pipes.stdin.write(Buffer.alloc(PRE_ROLL_SAMPLES * 2));
  }
}
