/**
 * A share of load-tests/realtime's sessions, in a worker thread of its own so that the measuring thread's
 * timers are not delayed by tens of thousands of frame sends a second. Each session is an OpenAI-Realtime
 * transcription session over the client `input.client` names (session-sockets.ts: the lean raw client by
 * default, or `ws`): it streams the same demo-speech cycle (silence, phrase, silence) in
 * 20 ms `input_audio_buffer.append` frames at real-time pace, starting at its own offset, and times the
 * server's events for each turn.
 *
 * workerData: WorkerInput. Message 'stop' ends the sessions; the worker then posts a WorkerReport.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { sessionSocketFactory, type ClientKind, type SessionSocket } from './session-sockets.js';

export interface WorkerInput {
  url: string;
  apiKey: string;
  sessions: number;
  /** The session.update (or transcription_session.update) sent once session.created arrives. */
  setup: string;
  /** One cycle of append messages, 20 ms of audio each. */
  frames: string[];
  /** Frame index within the cycle where the phrase's speech begins. */
  speechStartFrame: number;
  text: string;
  /** Sessions start spread over this long, as real callers do not all start on the same 20 ms tick. */
  staggerMs: number;
  client: ClientKind;
}

export interface TurnTiming {
  /** First delta − the send time of the phrase's first speech frame. */
  firstDeltaMs: number | null;
  /** completed − speech_stopped (both as received). */
  stopToFinalMs: number | null;
  exact: boolean;
  /** The transcript, when it is not the phrase. */
  transcript?: string;
}

export interface WorkerReport {
  connected: number;
  failedToConnect: number;
  framesSent: number;
  /** Frames the generator sent more than 40 ms after they were due (its own lag: the run is invalid if many). */
  framesLate: number;
  turns: TurnTiming[];
  /** `….transcription.failed` events, by error code. */
  failed: Record<string, number>;
  phrasesSent: number;
  speechStarted: number;
  errors: string[];
  closedEarly: number;
  /** This worker's own event-loop delay p99 (ms) from 'ready?' to 'stop': the client-side latencies include it. */
  loopDelayP99Ms: number;
}

const FRAME_MS = 20;
const input = workerData as WorkerInput;
const report: WorkerReport = {
  connected: 0,
  failedToConnect: 0,
  framesSent: 0,
  framesLate: 0,
  turns: [],
  failed: {},
  phrasesSent: 0,
  speechStarted: 0,
  errors: [],
  closedEarly: 0,
  loopDelayP99Ms: 0,
};
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
let stopping = false;

interface Turn {
  audioStartMs?: number;
  audioEndMs?: number;
  onsetSentAt: number;
  firstDeltaAt?: number;
  stoppedAt?: number;
}

const openSocket = sessionSocketFactory(input.client, input.url, input.apiKey, input.frames);

class Session {
  private socket: SessionSocket;
  private startedAt = 0;
  private next = 0;
  private ready = false;
  /** Send times of each phrase onset, oldest first; a speech_started claims the oldest unclaimed one. */
  private readonly onsets: number[] = [];
  private readonly turns = new Map<string, Turn>();

  constructor(private readonly offsetMs: number) {
    this.socket = openSocket({
      onText: (text) => this.onEvent(JSON.parse(text)),
      onError: (message) => {
        if (!this.ready) report.failedToConnect++;
        if (report.errors.length < 20) report.errors.push(`socket: ${message}`);
      },
      onClose: () => {
        if (this.ready && !stopping) report.closedEarly++;
        this.ready = false;
      },
    });
  }

  private onEvent(event: { type: string; item_id?: string; delta?: string; transcript?: string; error?: { message: string } }): void {
    const now = performance.now();
    switch (event.type) {
      case 'session.created':
        this.socket.sendText(input.setup);
        break;
      case 'session.updated':
      case 'transcription_session.updated':
        if (!this.ready) {
          this.ready = true;
          report.connected++;
          this.startedAt = now + this.offsetMs;
        }
        break;
      case 'input_audio_buffer.speech_started':
        report.speechStarted++;
        this.turns.set(event.item_id!, { onsetSentAt: this.onsets.shift() ?? now, audioStartMs: (event as { audio_start_ms?: number }).audio_start_ms });
        break;
      case 'input_audio_buffer.speech_stopped': {
        const turn = this.turns.get(event.item_id!);
        if (turn) ((turn.stoppedAt = now), (turn.audioEndMs = (event as { audio_end_ms?: number }).audio_end_ms));
        break;
      }
      case 'conversation.item.input_audio_transcription.delta': {
        const turn = this.turns.get(event.item_id!);
        if (turn && turn.firstDeltaAt === undefined) turn.firstDeltaAt = now;
        break;
      }
      case 'conversation.item.input_audio_transcription.completed': {
        const turn = this.turns.get(event.item_id!);
        if (!turn) break;
        this.turns.delete(event.item_id!);
        report.turns.push({
          firstDeltaMs: turn.firstDeltaAt === undefined ? null : turn.firstDeltaAt - turn.onsetSentAt,
          stopToFinalMs: turn.stoppedAt === undefined ? null : now - turn.stoppedAt,
          exact: event.transcript === input.text,
          ...(event.transcript === input.text ? {} : { transcript: `${event.transcript} [${turn.audioStartMs}–${turn.audioEndMs} ms]` }),
        });
        break;
      }
      case 'conversation.item.input_audio_transcription.failed': {
        this.turns.delete(event.item_id!);
        const code = (event as { error?: { code?: string } }).error?.code ?? 'unknown';
        report.failed[code] = (report.failed[code] ?? 0) + 1;
        break;
      }
      case 'error':
        if (report.errors.length < 20) report.errors.push(`error event: ${event.error?.message}`);
        break;
    }
  }

  /** Sends every frame that is due by `now` (normally one per 20 ms tick). */
  pump(now: number): void {
    if (!this.ready || this.startedAt > now) return;
    const first = this.next;
    while (this.startedAt + this.next * FRAME_MS <= now) {
      const due = this.startedAt + this.next * FRAME_MS;
      if (this.next % input.frames.length === input.speechStartFrame) {
        this.onsets.push(now);
        report.phrasesSent++;
      }
      if (now - due > 40) report.framesLate++;
      this.next++;
    }
    // One call for all the frames due: after a late tick the raw client sends them in one write.
    if (this.next > first) this.socket.sendFrames(first % input.frames.length, this.next - first);
    report.framesSent += this.next - first;
  }

  close(): void {
    this.socket.close();
  }
}

const sessions = Array.from({ length: input.sessions }, (_, i) => new Session((i / input.sessions) * input.staggerMs));
// A 5 ms tick: each session's frames go out within a few ms of their due time, all from one timer.
const timer = setInterval(() => {
  const now = performance.now();
  for (const session of sessions) session.pump(now);
}, 5);

parentPort!.on('message', (message: string) => {
  if (message === 'ready?') {
    const poll = setInterval(() => {
      if (report.connected + report.failedToConnect >= input.sessions) {
        clearInterval(poll);
        loopDelay.enable();
        // Counts so far: the orchestrator reports the generator's CPU per frame (and its lag) over its measured window.
        parentPort!.postMessage({ ready: report.connected, framesSent: report.framesSent, framesLate: report.framesLate });
      }
    }, 50);
    return;
  }
  // 'stop': no more frames; wait a little for the last turns' events, then report.
  clearInterval(timer);
  loopDelay.disable();
  report.loopDelayP99Ms = loopDelay.percentile(99) / 1e6;
  setTimeout(() => {
    stopping = true;
    for (const session of sessions) session.close();
    parentPort!.postMessage(report);
  }, 1500);
});
