/**
 * server_vad for one session: its 16 kHz audio goes to the shared VadService (which scores the windows of
 * all sessions together), the scores go through a turn detector (server_vad semantics), and the session
 * hears of turns and of how far the audio has been scored (for the idle timeout and for trimming the
 * buffer outside turns).
 */
import type { ServerVadOptions, TurnEvent, VadChannel, VadService } from './vad/contract.js';

/** Samples per VAD window at 16 kHz (contract.ts: window i covers [512·i, 512·i + 512)). */
export const VAD_WINDOW = 512;

/** A server_vad turn detector fed with window scores in order. */
export interface TurnDetection {
  push(firstWindow: number, probabilities: Float32Array): void;
}

export type TurnDetectorFactory = (options: ServerVadOptions, onTurn: (event: TurnEvent) => void) => TurnDetection;

export interface ServerVadHandlers {
  onTurn(event: TurnEvent): void;
  /** Every sample before `endSample` (clock index) has been scored. */
  onScored(endSample: number): void;
  onError(err: Error): void;
}

export interface VadDeps {
  service: VadService;
  detector: TurnDetectorFactory;
}

export class ServerVad {
  private readonly channel: VadChannel;
  private closed = false;

  /** `startSample`: the clock index of the first sample this channel will be given (VAD windows count from it). */
  constructor(deps: VadDeps, options: ServerVadOptions, private readonly startSample: number, handlers: ServerVadHandlers) {
    const offsetMs = startSample / 16;
    // The detector counts time from its channel's first sample; the session's clock may be further on
    // (server_vad turned on mid-session), so its times are shifted into the session clock.
    const detector = deps.detector(options, (event) => {
      if (this.closed) return;
      handlers.onTurn(event.type === 'speech_started' ? { type: event.type, audioStartMs: event.audioStartMs + offsetMs } : { type: event.type, audioEndMs: event.audioEndMs + offsetMs });
    });
    this.channel = deps.service.open(
      (firstWindow, probabilities) => {
        if (this.closed) return;
        detector.push(firstWindow, probabilities);
        handlers.onScored(this.startSample + (firstWindow + probabilities.length) * VAD_WINDOW);
      },
      (err) => {
        if (!this.closed) handlers.onError(err);
      },
    );
  }

  push(samples: Float32Array): void {
    if (!this.closed && samples.length) this.channel.push(samples);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.channel.close();
  }
}
