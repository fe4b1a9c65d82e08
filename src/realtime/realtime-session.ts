/**
 * One realtime transcription (or translation) session, free of any wire protocol: client inputs in order
 * (configure, append audio, commit, clear, close), outputs as SessionOutput events. It owns the input
 * decoder, the audio buffer in the session's audio clock, server_vad turns (or manual commits), and the
 * committed items, which are transcribed (and translated) one after another, so `completed` events go out
 * in commit order. Each item is billed when it is delivered; an item not delivered costs nothing.
 *
 * Rules where the reference is silent (README "Realtime"):
 * - audio before a transcription model is configured is refused (OpenAI's transcription defaults to off);
 * - audio is taken at most `inputRate.maxRate` times faster than real time after a burst (input-rate.ts);
 *   an append over that bound is refused whole with an error, and the session goes on;
 * - in a server_vad session the server commits only audio the VAD has scored: a turn, a turn longer than
 *   `maxBufferSeconds` (committed up to the scored audio, the speech going on as a new item with its own
 *   speech_started), or the idle timeout's span. Audio waiting to be scored is never committed by the
 *   server; while `maxBufferSeconds` of it waits, appends are refused. So silence never becomes an item
 *   because it arrived faster than the VAD scores it;
 * - in manual mode uncommitted audio beyond `maxBufferSeconds` is committed as an item (nothing is dropped);
 * - outside VAD turns the buffer keeps only what a turn starting now could reach back to (prefix padding,
 *   VAD lag, the idle timeout's span);
 * - the idle timeout counts scored audio without speech (the audio clock, not the wall clock) and commits
 *   that audio as an item, transcribed like any other but charged only when its transcript has words: the
 *   VAD found no speech in it, and silence is never billed.
 */
import { randomBytes } from 'node:crypto';
import { SessionLifecycle, type Session } from '../primitives/session-lifecycle.js';
import { RealtimeInputError } from './errors.js';
import { InputDecoder } from './input-decoder.js';
import { admitAppend, DEFAULT_INPUT_RATE, InputRateBound } from './input-rate.js';
import { deliverItem, KEY_REVOKED_MESSAGE, type CommittedItem, type DeliveryContext } from './item-delivery.js';
import { msToSamples, SampleBuffer, samplesToMs } from './sample-buffer.js';
import { ServerVad } from './server-vad.js';
import { VAD_WINDOW } from '../engines/vad/silero-batch.js';
import { applyUpdate, type SessionConfig, type SessionUpdate } from './session-config.js';
import type { FatalCode, RealtimeCloseReason, SessionInput, SessionOutput } from './session-events.js';
import type { TurnRecognizer } from './turn-transcriber.js';
import { turnRecognizer } from './turn-recognizers.js';
import type { TurnEvent } from './vad/contract.js';
import type { RealtimeSessionDeps } from './session-deps.js';

export type { RealtimeSessionDeps, SessionObserver } from './session-deps.js';
export type { RealtimeCloseReason } from './session-events.js';

/** OpenAI refuses to commit less than 100 ms of audio. */
const MIN_COMMIT_SAMPLES = msToSamples(100);
/** How far back before the scored audio a turn's onset (less its padding) may reach: the detector's confirmation delay. */
const VAD_LAG_MS = 3000;
/**
 * Audio past the start of a turn's ending silence that the model still hears: Silero's score falls below
 * the negative threshold a little before quiet word endings do, and a chunk's frames read ahead 0.25 s.
 */
const RECOGNITION_TAIL_SAMPLES = msToSamples(250);

interface OpenTurn {
  itemId: string;
  /** Clock index where the turn's audio begins. */
  start: number;
  transcriber: TurnRecognizer;
}

export class RealtimeSession implements Session<RealtimeCloseReason> {
  private config: SessionConfig;
  private decoder: InputDecoder | null = null;
  private readonly buffer = new SampleBuffer();
  private vad: ServerVad | null = null;
  private turn: OpenTurn | null = null;
  private lastItemId: string | null = null;
  /** Clock index of the last speech end or commit: the idle timeout counts from here. */
  private lastActivity = 0;
  /** server_vad: clock index up to which the VAD has scored the audio (what lies beyond is never committed by the server). */
  private scoredEnd = 0;
  /** A graceful close waiting for the VAD to score the audio it was given before the last turn is decided. */
  private closeAfterScoring = false;
  private readonly inputRate: InputRateBound;
  private readonly inbox: SessionInput[] = [];
  private busy = false;
  private items: Promise<void> = Promise.resolve();
  /** A graceful close is under way (the last turn is committed, every item finishes): inputs are refused. */
  private closing = false;
  /** Closed: every job is cancelled, every hold released, nothing more is emitted. */
  private readonly lifecycle = new SessionLifecycle<RealtimeCloseReason>();
  /** The server last refused interim work (too busy): the client was told, and is told again when it resumes. */
  private interimsPaused = false;
  /** What item delivery (item-delivery.ts) needs from the session. */
  private readonly delivery: DeliveryContext;

  constructor(
    private readonly deps: RealtimeSessionDeps,
    initial: SessionConfig,
    private readonly emit: (output: SessionOutput) => void,
  ) {
    this.config = initial;
    this.inputRate = new InputRateBound(deps.inputRate ?? DEFAULT_INPUT_RATE, deps.now);
    this.delivery = { deps, signal: this.lifecycle.signal, emit, fatal: (code, message) => this.fatal(code, message) };
  }

  get configuration(): SessionConfig {
    return this.config;
  }

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  /** Aborted when the session closes: its model runs and holds end with it. */
  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  /**
   * Prepares the decoder (and VAD) of the initial configuration; call once, when the socket is open (not
   * before: an upgrade that never completes would leave them behind). Inputs meanwhile wait in order.
   */
  start(): void {
    this.busy = true;
    this.reconfigure(this.config, true)
      .catch(() => this.fatal('server_error', 'The session could not be started.'))
      .finally(() => this.drain());
  }

  /** Takes one client input; inputs are acted on in order (an update that loads a decoder holds the ones after it). */
  /** Takes one client input. Appended audio may be a view its caller reuses: it is used (or copied) before this returns. */
  input(command: SessionInput): void {
    if (!this.busy) return this.handle(command);
    // A copy: the caller's view is a Buffer, whose slice() shares its memory (every append queued behind an
    // update then held the last frame parsed — a fresh server's first session heard its trailing silence).
    this.inbox.push(command.kind === 'append' ? { ...command, audio: new Uint8Array(command.audio) } : command);
  }

  /**
   * The session's key was revoked: it ends now with a fatal `key_revoked` (then `closed`). The item being
   * transcribed, and any committed after it, are cancelled and their holds released: nothing is delivered or
   * charged after the revocation.
   */
  revoke(): void {
    this.fatal('key_revoked', KEY_REVOKED_MESSAGE);
  }

  /**
   * Closes the session now (its client is gone): cancels every job, releases every hold, emits nothing
   * more. Idempotent. (A graceful close, which finishes what was said, is the `close` input.)
   */
  close(reason: RealtimeCloseReason): void {
    if (this.lifecycle.close(reason)) this.dispose();
  }

  private handle(command: SessionInput): void {
    if (this.lifecycle.closed || this.closing) {
      if (!this.lifecycle.closed)
        this.emit({ type: 'rejected', error: new RealtimeInputError('session_closed', 'The session is closing.'), input: command.kind, ref: command.ref });
      return;
    }
    try {
      if (command.kind === 'update') return this.update(command.update, command.ref);
      if (command.kind === 'append') return this.append(command.audio);
      if (command.kind === 'commit') return this.commit();
      if (command.kind === 'clear') return this.clear();
      return this.closeGracefully();
    } catch (err) {
      if (!(err instanceof RealtimeInputError)) throw err;
      this.emit({ type: 'rejected', error: err, input: command.kind, ref: command.ref });
    }
  }

  private update(update: SessionUpdate, ref: string | undefined): void {
    const next = applyUpdate(this.config, update);
    if (next.turnDetection && !this.deps.vad)
      throw new RealtimeInputError(
        'invalid_value',
        'server_vad is not available on this server (no VAD model is loaded); use turn_detection: null.',
        'session.turn_detection',
      );
    if (next.target && !this.deps.translator)
      throw new RealtimeInputError('invalid_value', 'Translation is not available on this server (no translation model is loaded).', 'session.language');
    this.busy = true;
    this.reconfigure(next, false)
      .then(
        () => this.emit({ type: 'updated' }),
        (err: unknown) =>
          this.emit({
            type: 'rejected',
            error: err instanceof RealtimeInputError ? err : new RealtimeInputError('invalid_value', 'The session could not be configured.'),
            input: 'update',
            ref,
          }),
      )
      .finally(() => this.drain());
  }

  /** Acts on the inputs that waited for an update (or the start) to finish, until another one makes them wait. */
  private drain(): void {
    this.busy = false;
    while (!this.busy && this.inbox.length) this.handle(this.inbox.shift()!);
  }

  private async reconfigure(next: SessionConfig, first: boolean): Promise<void> {
    const previous = this.config;
    const formatChanged = first || next.format.codec !== previous.format.codec || next.format.rate !== previous.format.rate;
    const decoder = formatChanged ? await InputDecoder.create(next.format) : this.decoder;
    if (this.lifecycle.closed) return decoder?.close();
    if (formatChanged) {
      this.decoder?.close();
      this.decoder = decoder;
    }
    this.config = next;
    if (first || JSON.stringify(next.turnDetection) !== JSON.stringify(previous.turnDetection)) this.restartVad();
  }

  private restartVad(): void {
    this.vad?.close();
    this.vad = null;
    this.turn?.transcriber.cancel();
    this.turn = null;
    this.lastActivity = this.buffer.end;
    this.scoredEnd = this.buffer.end;
    const options = this.config.turnDetection;
    if (!options || !this.deps.vad) return;
    this.vad = new ServerVad(this.deps.vad, options, this.buffer.end, {
      onTurn: (event) => this.onTurn(event),
      onScored: (end) => this.onScored(end),
      onError: () => this.fatal('server_error', 'Voice activity detection failed; the session cannot go on.'),
    });
  }

  private append(audio: Uint8Array): void {
    if (!this.config.model) {
      throw new RealtimeInputError(
        'session_not_configured',
        'No transcription model is configured: send session.update with audio.input.transcription.model (or transcription_session.update) before audio.',
        'audio',
      );
    }
    // Refused whole (an error naming the append) when over the rate bound, or when too much waits for the VAD.
    admitAppend(
      this.inputRate,
      this.decoder!.secondsIn(audio.length),
      this.vad ? (this.buffer.end - this.scoredEnd) / 16_000 : null,
      this.deps.maxBufferSeconds,
    );
    const samples = this.decoder!.decode(audio);
    if (!samples.length) return;
    this.buffer.append(samples);
    this.vad?.push(samples);
    const turn = this.turn;
    if (turn) turn.transcriber.offer(this.buffer.end - turn.start, (from, to) => this.buffer.copy(turn.start + from, turn.start + to));
    this.enforceBufferLimit();
  }

  private enforceBufferLimit(): void {
    const max = this.deps.maxBufferSeconds * 16_000;
    if (this.vad) {
      // server_vad: only scored audio is committed by the server. Outside a turn, onScored trims what the VAD
      // has scored and admit() bounds what waits for it; a turn longer than the limit is committed up to the
      // scored audio, and the speech goes on as a new item.
      const turn = this.turn;
      const scored = Math.min(this.scoredEnd, this.buffer.end);
      if (!turn || scored - turn.start < max) return;
      this.turn = null;
      this.commitRange(turn.start, scored, turn.itemId, turn.transcriber);
      this.openTurn(scored);
      return;
    }
    // Manual mode: the client's uncommitted audio is committed as an item rather than dropped.
    if (this.buffer.end - this.buffer.start > max) this.commitRange(this.buffer.start, this.buffer.end, newItemId(), null);
  }

  private commit(): void {
    const from = this.turn ? this.turn.start : this.buffer.start;
    const held = this.buffer.end - from;
    if (held < MIN_COMMIT_SAMPLES) {
      throw new RealtimeInputError(
        'input_audio_buffer_commit_empty',
        `Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has ${samplesToMs(held)}ms of audio.`,
      );
    }
    const turn = this.turn;
    this.turn = null;
    this.commitRange(from, this.buffer.end, turn?.itemId ?? newItemId(), turn?.transcriber ?? null);
    this.vad?.reset(this.buffer.end);
  }

  private clear(): void {
    this.turn?.transcriber.cancel();
    this.turn = null;
    this.buffer.dropBefore(this.buffer.end);
    this.lastActivity = this.buffer.end;
    this.vad?.reset(this.buffer.end);
    this.emit({ type: 'cleared' });
  }

  /**
   * Graceful end: the turn being spoken (or, in manual mode, the uncommitted audio) is committed, then every
   * item finishes. With server_vad, the VAD first scores the audio it was given, so that the last turn is
   * decided on scored audio (and speech sent just before the close is not lost).
   */
  private closeGracefully(): void {
    this.closing = true;
    if (this.vad && this.buffer.end - this.scoredEnd >= VAD_WINDOW) {
      this.closeAfterScoring = true;
      return;
    }
    this.finishClose();
  }

  private finishClose(): void {
    this.closeAfterScoring = false;
    const turn = this.turn;
    if (turn) {
      this.turn = null;
      this.emit({ type: 'speech_stopped', itemId: turn.itemId, audioEndMs: samplesToMs(this.buffer.end) });
      this.commitRange(turn.start, this.buffer.end, turn.itemId, turn.transcriber, { stoppedAt: performance.now() });
    } else if (!this.vad && this.config.model && this.buffer.heldSamples >= MIN_COMMIT_SAMPLES) this.commit();
    void this.items.then(() => this.end('finished'));
  }

  /** Whether VAD results still matter: the session is open, or its close waits for them. */
  private get listening(): boolean {
    return !this.lifecycle.closed && (!this.closing || this.closeAfterScoring);
  }

  private onTurn(event: TurnEvent): void {
    if (!this.listening) return;
    if (event.type === 'speech_started') {
      if (!this.turn) this.openTurn(Math.max(msToSamples(event.audioStartMs), this.buffer.start));
      return;
    }
    const turn = this.turn;
    if (!turn) return; // the turn was committed or cleared by the client meanwhile
    const end = Math.min(Math.max(msToSamples(event.audioEndMs), turn.start), this.buffer.end);
    this.turn = null;
    this.emit({ type: 'speech_stopped', itemId: turn.itemId, audioEndMs: samplesToMs(end) });
    // The turn's speech, as far as the model needs to hear it: up to a little past where the VAD's silence
    // began. The rest of the silence that ended the turn (silence_duration_ms, 500 by default) holds no
    // words; encoding it cost ≈ 8 % of a 4 s turn's final, which the caller waits for (FinalLimits).
    const heard = event.silenceStartMs === undefined ? end : Math.min(end, Math.max(turn.start, msToSamples(event.silenceStartMs) + RECOGNITION_TAIL_SAMPLES));
    this.commitRange(turn.start, end, turn.itemId, turn.transcriber, {
      stoppedAt: performance.now(),
      ...(heard < end ? { speechSamples: heard - turn.start } : {}),
    });
  }

  private openTurn(start: number): void {
    const itemId = newItemId();
    this.turn = { itemId, start, transcriber: this.transcriberFor(itemId) };
    this.deps.observer?.turnDetected();
    this.emit({ type: 'speech_started', itemId, audioStartMs: samplesToMs(start) });
  }

  private onScored(end: number): void {
    this.scoredEnd = end;
    if (!this.listening) return;
    this.trackScored(end);
    if (this.closeAfterScoring && this.buffer.end - end < VAD_WINDOW) this.finishClose();
  }

  private trackScored(end: number): void {
    if (this.turn) return this.enforceBufferLimit();
    const vad = this.config.turnDetection!;
    if (vad.idleTimeoutMs !== null && end - this.lastActivity >= msToSamples(vad.idleTimeoutMs)) {
      const itemId = newItemId();
      const start = Math.max(this.lastActivity, this.buffer.start);
      this.emit({ type: 'timeout_triggered', itemId, audioStartMs: samplesToMs(start), audioEndMs: samplesToMs(end) });
      this.commitRange(start, end, itemId, null, { idle: true });
      return;
    }
    // Outside a turn, only what a turn's onset (less its padding) or the idle timeout could reach back to is kept.
    const keepMs = Math.min(vad.prefixPaddingMs + VAD_LAG_MS + (vad.idleTimeoutMs ?? 0), this.deps.maxBufferSeconds * 1000);
    // (The idle span is inside keepMs, so the audio an idle timeout commits is still held.)
    const trimTo = end - msToSamples(keepMs);
    if (trimTo - this.buffer.start >= 16_000) this.buffer.dropBefore(trimTo);
  }

  private transcriberFor(itemId: string): TurnRecognizer {
    const deps = this.deps.interimAllowed ? { ...this.deps, interimAllowed: () => this.interimGate() } : this.deps;
    return turnRecognizer(this.config.model!, deps, this.lifecycle.signal, (delta) => this.emit({ type: 'delta', itemId, delta }));
  }

  /**
   * The server's interim gate, asked as a turn's audio grows; the client hears when its answer changes
   * (`interims` output), so a page can say why text stops forming while a turn is spoken.
   */
  private interimGate(): boolean {
    const allowed = this.deps.interimAllowed!();
    if (allowed === this.interimsPaused) {
      this.interimsPaused = !allowed;
      this.emit({ type: 'interims', paused: this.interimsPaused });
    }
    return allowed;
  }

  /** Commits [from, to) as item `itemId` and queues its transcription behind the items committed before it. */
  private commitRange(
    from: number,
    to: number,
    itemId: string,
    transcriber: TurnRecognizer | null,
    extra: { stoppedAt?: number; idle?: boolean; speechSamples?: number } = {},
  ): void {
    const samples = this.buffer.copy(from, to);
    this.buffer.dropBefore(to);
    this.lastActivity = to;
    this.emit({ type: 'committed', itemId, previousItemId: this.lastItemId });
    this.lastItemId = itemId;
    const job: CommittedItem = {
      itemId,
      samples,
      transcriber: transcriber ?? this.transcriberFor(itemId),
      model: this.config.model!,
      target: this.config.target,
      committedAt: performance.now(),
      ...extra,
    };
    this.items = this.items.then(() => deliverItem(this.delivery, job));
  }

  private fatal(code: FatalCode, message: string): void {
    if (this.lifecycle.closed) return;
    this.emit({ type: 'fatal', code, message });
    this.end(code);
  }

  /** The session ends on its own (its items finished after a graceful close, or a fatal error): `closed` is the last output. */
  private end(reason: RealtimeCloseReason): void {
    if (!this.lifecycle.close(reason)) return;
    this.dispose();
    this.emit({ type: 'closed' });
  }

  /** The teardown, once: the lifecycle's signal has just cancelled every job. */
  private dispose(): void {
    this.turn?.transcriber.cancel();
    this.turn = null;
    this.vad?.close();
    this.vad = null;
    this.decoder?.close();
    this.decoder = null;
  }
}

function newItemId(): string {
  return `item_${randomBytes(10).toString('hex')}`;
}
