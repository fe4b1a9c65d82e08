/**
 * One simulated phone call as a carrier would stream it to Kuma, over a WebSocket (`ws`) or a TCP socket
 * (AudioSocket): it sends the carrier's documented opening, the caller's audio in paced media frames, DTMF and
 * the closing; and it plays what Kuma sends back through a model of the carrier's playout buffer — audio
 * plays in real time (× speed) after whatever is queued, a mark is echoed once the audio before it has
 * played, a clear drops the queue. Everything received is logged with its arrival time for assertions.
 * The carrier's wire format is a `CarrierDialect` (one file per carrier beside this one).
 */
import type { Socket } from 'node:net';
import type WebSocket from 'ws';
import { StreamClock } from './pacer.js';
import { bytesPerSecond, concatBytes, decodePhone, durationMs, encodePhone, frames, type PhoneFormat } from './phone-audio.js';

export type WireFrame = { text: string } | { binary: Uint8Array };

/** What a carrier makes of one frame Kuma sent it. */
export type ServerFrame =
  | { kind: 'audio'; bytes: Uint8Array }
  /** `echo` is the carrier's answer once the audio before the mark has played (Twilio's `mark`, Plivo's `playedStream`). */
  | { kind: 'mark'; name: string; echo: WireFrame }
  | { kind: 'clear'; ack: WireFrame | null }
  | { kind: 'hangup' };

/** One carrier's wire format, for one call (dialects may hold state: sequence numbers, a partial TCP frame). */
export interface CarrierDialect {
  readonly carrier: string;
  /** The caller's audio format on the wire; Kuma's answer is expected in the same. */
  readonly format: PhoneFormat;
  /** Bytes of caller audio per media frame (Twilio 160; Exotel sends 100 ms chunks). */
  readonly mediaFrameBytes: number;
  /** Whether a clear also returns the marks still queued (Twilio, Telnyx) or drops them (Plivo, Vonage). */
  readonly echoMarksOnClear: boolean;
  opening(): WireFrame[];
  media(bytes: Uint8Array, streamMs: number): WireFrame;
  dtmf(digit: string): WireFrame;
  /** Frames that end the stream before the socket closes (Twilio `stop`; Plivo none: it just closes). */
  closing(): WireFrame[];
  /** Kuma's frame as this carrier reads it; throws (with a message) when it is not this carrier's protocol. */
  read(frame: WireFrame): ServerFrame[];
}

export interface SimulatedCallOptions {
  /** 1 = real time (default), 10 = ten times faster, Infinity = as fast as possible. Playout runs at the same speed. */
  speed?: number;
}

export interface ReceivedAudio {
  /** performance.now() at arrival. */
  at: number;
  bytes: Uint8Array;
  /** When the modelled playout starts and ends this chunk (wall ms); `playedMs` is cut short by a clear. */
  playStart: number;
  playEnd: number;
  playedMs: number;
}

export interface CallLog {
  audio: ReceivedAudio[];
  marks: { name: string; at: number; echoedAt: number | null }[];
  clears: { at: number; droppedMs: number }[];
  hangups: { at: number }[];
  /** Frames that were not the carrier's protocol (the test should expect none). */
  protocolErrors: string[];
}

export interface CarrierLink {
  send(frame: WireFrame): void;
  close(): void;
}

export function wsLink(ws: WebSocket, onFrame: (f: WireFrame) => void): CarrierLink {
  ws.on('message', (data, isBinary) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    onFrame(isBinary ? { binary: new Uint8Array(bytes) } : { text: bytes.toString('utf8') });
  });
  return {
    send: (f) => {
      if (ws.readyState === ws.OPEN) ws.send('text' in f ? f.text : f.binary, { binary: !('text' in f) });
    },
    close: () => ws.close(1000),
  };
}

export function socketLink(socket: Socket, onFrame: (f: WireFrame) => void): CarrierLink {
  socket.on('data', (chunk: Buffer) => onFrame({ binary: new Uint8Array(chunk) }));
  return {
    send: (f) => {
      if (!socket.destroyed) socket.write('text' in f ? f.text : f.binary);
    },
    close: () => socket.end(),
  };
}

export class SimulatedCall {
  readonly log: CallLog = { audio: [], marks: [], clears: [], hangups: [], protocolErrors: [] };
  private readonly clock: StreamClock;
  private readonly link: CarrierLink;
  /** Wall time at which the playout queue runs dry. */
  private playoutFreeAt = 0;
  private readonly pendingMarks = new Map<number, { timer: NodeJS.Timeout; fire: () => void }>();
  private markSeq = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly dialect: CarrierDialect,
    connect: (onFrame: (f: WireFrame) => void) => CarrierLink,
    options: SimulatedCallOptions = {},
  ) {
    this.clock = new StreamClock(options.speed ?? 1);
    this.link = connect((f) => this.receive(f));
  }

  /** Sends the carrier's opening frames (Twilio `connected` + `start`; Vonage `websocket:connected`; AudioSocket UUID). */
  open(): void {
    for (const f of this.dialect.opening()) this.link.send(f);
  }

  /** Streams caller audio (PCM at the dialect's sample rate) as paced media frames. */
  async speak(pcm: Int16Array): Promise<void> {
    const { format, mediaFrameBytes } = this.dialect;
    const frameMs = durationMs(format, mediaFrameBytes);
    for (const frame of frames(encodePhone(pcm, format.codec), mediaFrameBytes, format.codec)) {
      await this.clock.next(frameMs);
      this.link.send(this.dialect.media(frame, this.clock.streamMs - frameMs));
    }
  }

  /** Streams `ms` of silence, as a carrier does while the caller says nothing. */
  silence(ms: number): Promise<void> {
    return this.speak(new Int16Array(Math.round((ms * this.dialect.format.sampleRate) / 1000)));
  }

  dtmf(digit: string): void {
    this.link.send(this.dialect.dtmf(digit));
  }

  /** Ends the stream as the carrier does (its closing frames, then the socket closes). */
  hangup(): void {
    for (const f of this.dialect.closing()) this.link.send(f);
    this.link.close();
  }

  /** Sends a raw frame (for malformed-frame tests). */
  sendRaw(frame: WireFrame): void {
    this.link.send(frame);
  }

  /** Everything Kuma sent as audio, decoded to PCM. */
  receivedPcm(): Int16Array {
    return decodePhone(concatBytes(this.log.audio.map((a) => a.bytes)), this.dialect.format.codec);
  }

  /** Audio the caller actually heard (each chunk cut where a clear interrupted it), decoded to PCM. */
  playedPcm(): Int16Array {
    const bytesPerMs = bytesPerSecond(this.dialect.format) / 1000;
    const played = this.log.audio.map((a) => a.bytes.subarray(0, Math.min(a.bytes.length, Math.round(a.playedMs * bytesPerMs))));
    return decodePhone(concatBytes(played), this.dialect.format.codec);
  }

  /** Resolves once `check(log)` holds (checked on every frame received); rejects after `timeoutMs`. */
  waitFor(check: (log: CallLog) => boolean, timeoutMs = 10_000): Promise<void> {
    if (check(this.log)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = (): void => {
        if (!check(this.log)) return;
        this.waiters.delete(waiter);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`${this.dialect.carrier} call: condition not met within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  private receive(frame: WireFrame): void {
    let parsed: ServerFrame[];
    try {
      parsed = this.dialect.read(frame);
    } catch (err) {
      this.log.protocolErrors.push((err as Error).message);
      return this.notify();
    }
    for (const f of parsed) this.apply(f);
    this.notify();
  }

  private apply(f: ServerFrame): void {
    const now = performance.now();
    const speed = this.clock.speed;
    if (f.kind === 'audio') {
      const ms = durationMs(this.dialect.format, f.bytes.length);
      const playStart = Math.max(now, this.playoutFreeAt);
      const playEnd = speed === Infinity ? playStart : playStart + ms / speed;
      this.playoutFreeAt = playEnd;
      this.log.audio.push({ at: now, bytes: f.bytes, playStart, playEnd, playedMs: ms });
    } else if (f.kind === 'mark') {
      const entry = { name: f.name, at: now, echoedAt: null as number | null };
      this.log.marks.push(entry);
      const id = this.markSeq++;
      const fire = (): void => {
        this.pendingMarks.delete(id);
        entry.echoedAt = performance.now();
        this.link.send(f.echo);
        this.notify();
      };
      this.pendingMarks.set(id, { timer: setTimeout(fire, Math.max(0, this.playoutFreeAt - now)), fire });
    } else if (f.kind === 'clear') {
      this.log.clears.push({ at: now, droppedMs: this.cutPlayout(now) });
      for (const { timer, fire } of [...this.pendingMarks.values()]) {
        clearTimeout(timer);
        if (this.dialect.echoMarksOnClear) fire();
      }
      this.pendingMarks.clear();
      if (f.ack) this.link.send(f.ack);
    } else {
      this.log.hangups.push({ at: now });
    }
  }

  /** A clear at `now`: chunks not yet played are dropped, the one playing is cut; returns the audio ms dropped. */
  private cutPlayout(now: number): number {
    let dropped = 0;
    for (const a of this.log.audio) {
      if (a.playEnd <= now) continue;
      const full = durationMs(this.dialect.format, a.bytes.length);
      const playedWall = Math.max(0, now - a.playStart);
      a.playedMs = Math.min(full, playedWall * this.clock.speed);
      a.playEnd = Math.min(a.playEnd, now);
      dropped += full - a.playedMs;
    }
    this.playoutFreeAt = now;
    return dropped;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }
}
