/**
 * A request's abort signal, made only when something reads it. Most requests (a model list, a 401, a 429)
 * never look at their signal, and an AbortController per request cost ≈ 6 % of the I/O thread's CPU on a
 * small route. Aborting before anyone asked still counts: the signal, when made, is already aborted.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private fired = false;
  private reason: unknown;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.fired) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.fired;
  }

  abort(reason: unknown): void {
    if (this.fired) return;
    this.fired = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
