/**
 * server_vad for one session: its 16 kHz audio goes to the shared VadService (which scores the windows of
 * all sessions together), the scores go through a TurnDetector (server_vad semantics), and the session
 * hears of turns and of how far the audio has been scored (for the idle timeout and for trimming the
 * buffer outside turns). Each window's level (dBFS) is measured here as the audio arrives and handed to the
 * detector with the window's score, so that loud audio the model scores as non-speech does not end a turn
 * as quickly as silence does (turn-detector.ts).
 */
import type { ServerVadOptions, TurnEvent, VadChannel, VadService } from './vad/contract.js';
import { TurnDetector } from './vad/turn-detector.js';
import { VAD_WINDOW } from '../engines/vad/silero-batch.js';

export interface ServerVadHandlers {
  onTurn(event: TurnEvent): void;
  /** Every sample before `endSample` (clock index) has been scored. */
  onScored(endSample: number): void;
  onError(err: Error): void;
}

export class ServerVad {
  private readonly channel: VadChannel;
  private readonly detector: TurnDetector;
  /** The detector counts time from its channel's first sample: the session clock there, in ms. */
  private readonly offsetMs: number;
  private closed = false;
  /** Levels (dBFS) of the channel's windows not yet scored: levels[0] is window `levelsFirst`. */
  private levels: number[] = [];
  private levelsFirst = 0;
  /** The window being filled: its sum of squares and sample count. */
  private energy = 0;
  private filled = 0;

  /** `startSample`: the clock index of the first sample this channel will be given (VAD windows count from it). */
  constructor(
    service: VadService,
    options: ServerVadOptions,
    private readonly startSample: number,
    handlers: ServerVadHandlers,
  ) {
    this.offsetMs = startSample / 16;
    this.detector = new TurnDetector(options);
    this.channel = service.open(
      (firstWindow, probabilities) => {
        if (this.closed) return;
        for (const event of this.detector.feed(firstWindow, probabilities, this.takeLevels(firstWindow, probabilities.length))) {
          if (this.closed) return;
          // server_vad may be turned on mid-session: the detector's times are shifted into the session clock.
          handlers.onTurn(
            event.type === 'speech_started'
              ? { type: event.type, audioStartMs: event.audioStartMs + this.offsetMs }
              : {
                  type: event.type,
                  audioEndMs: event.audioEndMs + this.offsetMs,
                  ...(event.silenceStartMs !== undefined ? { silenceStartMs: event.silenceStartMs + this.offsetMs } : {}),
                },
          );
        }
        if (!this.closed) handlers.onScored(this.startSample + (firstWindow + probabilities.length) * VAD_WINDOW);
      },
      (err) => {
        if (!this.closed) handlers.onError(err);
      },
    );
  }

  push(samples: Float32Array): void {
    if (this.closed || !samples.length) return;
    this.measure(samples);
    this.channel.push(samples);
  }

  /** Adds the level of every window `samples` completes (windows count from the channel's first sample, as the VAD's do). */
  private measure(samples: Float32Array): void {
    let energy = this.energy;
    let filled = this.filled;
    for (let i = 0; i < samples.length; i++) {
      const x = samples[i]!;
      energy += x * x;
      if (++filled === VAD_WINDOW) {
        this.levels.push(10 * Math.log10(energy / VAD_WINDOW + 1e-12));
        energy = 0;
        filled = 0;
      }
    }
    this.energy = energy;
    this.filled = filled;
  }

  /** The levels of windows [first, first + count), dropping those and any before them (scored windows come in order). */
  private takeLevels(first: number, count: number): number[] {
    const from = first - this.levelsFirst;
    const taken = this.levels.slice(from, from + count);
    this.levels.splice(0, from + count);
    this.levelsFirst = first + count;
    return taken;
  }

  /** Forgets the turn in progress (clear, manual commit): the next one reaches back no further than `fromSample`. */
  reset(fromSample: number): void {
    this.detector.reset(Math.max(0, fromSample / 16 - this.offsetMs));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.channel.close();
  }
}
