/**
 * One simulated Twilio Media Stream (bidirectional `<Connect><Stream>`) for the telephony load test, over the
 * raw RFC 6455 client (../realtime/raw-websocket.ts: the `ws` client's per-frame cost would take the 2 cores
 * from the server at 10 000 frames a second). It follows Twilio's documented message order and types —
 * `connected`, `start` with `customParameters.token`, `media` frames of 160 μ-law bytes every 20 ms with string
 * `sequenceNumber`/`chunk`/`timestamp`, `mark` echoes, `stop` — and plays what Kuma sends through a model of
 * Twilio's playout buffer: reply audio plays in real time after whatever is queued, a mark is echoed once the
 * audio before it has played, a `clear` drops the queue and echoes the marks still pending (as Twilio does).
 *
 * The caller streams its script (silence, a phrase, silence long enough for the reply, the next phrase …)
 * without a break, as a phone line does, and records for each phrase it finished: when its last speech frame
 * left, the prompt the app got for it, and the arrival time of every reply frame.
 */
import crypto from 'node:crypto';
import { RawWebSocket } from '../realtime/raw-websocket.js';
import { OPCODE, clientFrame } from '../realtime/websocket-frames.js';
import { FRAME_MS } from './reply-timing.js';

/** The caller's audio, prepared once for every call of a worker. */
export interface CallScript {
  /** Base64 μ-law payload of each 20 ms frame of the whole script (every phrase's cycle, one after another). */
  payloads: string[];
  /** 1 where the frame is the phrase's speech (replaced by silence once the caller stops talking). */
  speech: Uint8Array;
  /** Frame index of each phrase's last speech frame → the phrase's index. */
  speechEnds: Record<number, number>;
  silencePayload: string;
}

export interface Turn {
  phrase: number;
  /** performance.now() when the phrase's last speech frame was sent. */
  speechEndAt: number;
  promptAt?: number;
  promptText?: string;
  /** The app's own time: prompt received → first `text` sent. */
  appMs?: number;
  /** Arrival of every reply frame. */
  arrivals: number[];
}

/** What every call of a worker adds to. */
export interface CallTally {
  framesSent: number;
  /** Frames the generator sent over 40 ms after due (its own lag). */
  framesLate: number;
  framesReceived: number;
  marksEchoed: number;
  clears: number;
  /** Reply audio with no prompt to answer (before the first prompt). */
  unexpectedMedia: number;
  protocolErrors: number;
  /** The first few problems, as text. */
  problems: string[];
  closedAbnormally: number;
}

/** 160 μ-law bytes in base64. */
const MEDIA_PAYLOAD_CHARS = 216;

export class TwilioCaller {
  readonly callSid = `CA${crypto.randomBytes(16).toString('hex')}`;
  private readonly streamSid = `MZ${crypto.randomBytes(16).toString('hex')}`;
  private readonly accountSid = `AC${crypto.randomBytes(16).toString('hex')}`;
  private readonly socket: RawWebSocket;
  readonly turns: Turn[] = [];
  /** The turn whose reply is playing (the last one prompted). */
  private replying: Turn | null = null;
  private sequence = 0;
  private chunk = 0;
  private startedAt = Number.NaN;
  opened = false;
  /** The connection could not be opened (refused upgrade, socket error before it). */
  failed = false;
  closed = false;
  private hungUp = false;
  /** Cleared when the window closes: the caller says no new phrase. */
  speaking = true;
  /** Sending a phrase's speech (it is finished even once `speaking` is cleared). */
  private midPhrase = false;
  /** Wall time at which the modelled playout queue runs dry. */
  private playoutFreeAt = 0;
  private readonly pendingMarks = new Map<string, NodeJS.Timeout>();

  constructor(
    url: string,
    private readonly token: string,
    private readonly script: CallScript,
    /** Where in the script this caller starts (callers start on different phrases). */
    private readonly firstFrame: number,
    private readonly mask: Buffer,
    private readonly tally: CallTally,
  ) {
    this.socket = new RawWebSocket(
      url,
      { mask },
      {
        onOpen: () => this.open(),
        onText: (text) => this.receive(text),
        onError: (err) => {
          if (!this.opened) this.failed = true;
          this.problem(`socket: ${err.message}`);
        },
        onClose: (code, reason) => {
          this.closed = true;
          for (const timer of this.pendingMarks.values()) clearTimeout(timer);
          if (!this.hungUp || (code !== 1000 && code !== 1005)) {
            tally.closedAbnormally++;
            this.problem(`call closed ${this.hungUp ? 'after' : 'before'} the hang-up: ${code} ${reason}`);
          }
        },
      },
    );
  }

  private open(): void {
    this.opened = true;
    this.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    const start = {
      accountSid: this.accountSid,
      streamSid: this.streamSid,
      callSid: this.callSid,
      tracks: ['inbound'],
      customParameters: { token: this.token },
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    };
    this.send(JSON.stringify({ event: 'start', sequenceNumber: String(++this.sequence), start, streamSid: this.streamSid }));
    this.startedAt = performance.now();
  }

  /** Sends every media frame due by `now` (one per 20 ms; several after a late tick). */
  pump(now: number): void {
    if (!this.opened || this.closed || this.hungUp) return;
    const { payloads, speech, speechEnds, silencePayload } = this.script;
    while (this.startedAt + this.chunk * FRAME_MS <= now) {
      if (now - (this.startedAt + this.chunk * FRAME_MS) > 40) this.tally.framesLate++;
      const index = (this.firstFrame + this.chunk) % payloads.length;
      // A caller told to stop talking finishes the phrase it is in (a phrase cut short would be a turn of its own).
      if (speech[index] && !this.midPhrase) this.midPhrase = this.speaking;
      const payload = !speech[index] || this.midPhrase ? payloads[index]! : silencePayload;
      const timestamp = this.chunk * FRAME_MS;
      this.chunk++;
      // Built as a template: JSON.stringify per frame would cost the generator ~10 000 times a second.
      this.send(
        `{"event":"media","sequenceNumber":"${++this.sequence}","media":{"track":"inbound","chunk":"${this.chunk}","timestamp":"${timestamp}","payload":"${payload}"},"streamSid":"${this.streamSid}"}`,
      );
      this.tally.framesSent++;
      const phrase = speechEnds[index];
      if (phrase !== undefined && this.midPhrase) {
        this.midPhrase = false;
        this.turns.push({ phrase, speechEndAt: performance.now(), arrivals: [] });
      }
    }
  }

  /** The app received a final prompt on this call: it answers the oldest phrase not yet prompted. */
  prompted(text: string, at: number): void {
    const turn = this.turns.find((t) => t.promptAt === undefined);
    if (!turn) {
      // A phrase heard as two turns: the reply to the second part is kept apart, not added to the first's.
      this.replying = { phrase: -1, speechEndAt: at, promptAt: at, promptText: text, arrivals: [] };
      return this.problem(`a prompt with no phrase spoken before it: ${JSON.stringify(text)}`);
    }
    turn.promptAt = at;
    turn.promptText = text;
    this.replying = turn;
  }

  /** The app sent its first `text` token for the last prompt. */
  answered(at: number): void {
    if (this.replying && this.replying.appMs === undefined) this.replying.appMs = at - this.replying.promptAt!;
  }

  /** Twilio's hang-up: `stop`, then the socket closes. */
  hangup(): void {
    if (this.hungUp || this.closed) return;
    this.hungUp = true;
    if (!this.opened) return;
    this.send(
      JSON.stringify({
        event: 'stop',
        sequenceNumber: String(++this.sequence),
        streamSid: this.streamSid,
        stop: { accountSid: this.accountSid, callSid: this.callSid },
      }),
    );
    this.socket.close(1000);
  }

  private send(text: string): void {
    this.socket.sendFrame(clientFrame(OPCODE.text, Buffer.from(text, 'utf8'), this.mask));
  }

  private receive(text: string): void {
    const now = performance.now();
    let message: { event?: unknown; streamSid?: unknown; media?: { payload?: unknown }; mark?: { name?: unknown } };
    try {
      message = JSON.parse(text);
    } catch {
      return this.protocolError(`not JSON: ${text.slice(0, 80)}`);
    }
    if (message.streamSid !== this.streamSid) return this.protocolError(`streamSid ${JSON.stringify(message.streamSid)}, expected ${this.streamSid}`);
    switch (message.event) {
      case 'media': {
        const payload = message.media?.payload;
        if (
          typeof payload !== 'string' ||
          payload.length !== MEDIA_PAYLOAD_CHARS ||
          Object.keys(message).length !== 3 ||
          Object.keys(message.media!).length !== 1
        ) {
          return this.protocolError(`media frame not of 160 bytes alone: ${text.slice(0, 120)}`);
        }
        this.tally.framesReceived++;
        this.playoutFreeAt = Math.max(now, this.playoutFreeAt) + FRAME_MS;
        if (this.replying) this.replying.arrivals.push(now);
        else this.tally.unexpectedMedia++;
        return;
      }
      case 'mark': {
        const name = message.mark?.name;
        if (typeof name !== 'string') return this.protocolError(`mark without a name: ${text.slice(0, 120)}`);
        // Echoed once the audio queued before it has played, as Twilio does.
        this.pendingMarks.set(
          name,
          setTimeout(() => this.echoMark(name), Math.max(0, this.playoutFreeAt - now)),
        );
        return;
      }
      case 'clear':
        // Twilio drops what it holds and echoes the marks still pending.
        this.tally.clears++;
        this.playoutFreeAt = now;
        for (const [name, timer] of [...this.pendingMarks]) (clearTimeout(timer), this.echoMark(name));
        return;
      default:
        return this.protocolError(`unknown event ${JSON.stringify(message.event)}`);
    }
  }

  private echoMark(name: string): void {
    this.pendingMarks.delete(name);
    if (this.closed || this.hungUp) return;
    this.send(JSON.stringify({ event: 'mark', sequenceNumber: String(++this.sequence), streamSid: this.streamSid, mark: { name } }));
    this.tally.marksEchoed++;
  }

  private protocolError(message: string): void {
    this.tally.protocolErrors++;
    this.problem(`protocol: ${message}`);
  }

  private problem(message: string): void {
    if (this.tally.problems.length < 20) this.tally.problems.push(`${this.callSid.slice(0, 10)}: ${message}`);
  }
}
