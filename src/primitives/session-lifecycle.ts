/**
 * The one lifecycle idiom every session follows (a realtime session, a speech socket and its contexts, a
 * call, its voice, a relay link): `close(reason)` is idempotent and says whether this call was the one that
 * closed; `closed` and `reason` tell the state; `signal` aborts on close, so that work started for the
 * session (a model run, an upstream fetch, a timer) stops with it without each owner wiring its own flag.
 *
 * Sessions hold one of these rather than inherit from it: what a close tears down stays in the session,
 * and the guard that makes it run once lives here.
 */

/** The reason a session was closed, carried by its signal's abort reason. */
export class SessionClosedError extends Error {
  constructor(readonly reason: string) {
    super(`The session was closed: ${reason}.`);
    this.name = 'SessionClosedError';
  }
}

/** What every session exposes, whatever it speaks. */
export interface Session<Reason extends string = string> {
  readonly closed: boolean;
  /** Aborted once the session is closed, with a SessionClosedError naming the reason. */
  readonly signal: AbortSignal;
  /** Ends the session; a second call does nothing. */
  close(reason: Reason): void | Promise<void>;
}

export class SessionLifecycle<Reason extends string = string> {
  private readonly controller = new AbortController();
  private closedFor: Reason | undefined;

  get closed(): boolean {
    return this.closedFor !== undefined;
  }

  /** Why the session closed, once it has. */
  get reason(): Reason | undefined {
    return this.closedFor;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Marks the session closed and fires the signal. True only for the call that closed it. */
  close(reason: Reason): boolean {
    if (this.closedFor !== undefined) return false;
    this.closedFor = reason;
    this.controller.abort(new SessionClosedError(reason));
    return true;
  }

  /** Throws the SessionClosedError once closed: for methods that must not start work on a closed session. */
  throwIfClosed(): void {
    if (this.closedFor !== undefined) throw new SessionClosedError(this.closedFor);
  }
}
