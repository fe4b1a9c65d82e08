/**
 * Engine-level failures, free of HTTP: the API layer maps them to envelopes (overloaded → 503 with
 * Retry-After, not ready → 503, cancelled → nothing is sent, failed → 500).
 */

export class EngineOverloadedError extends Error {
  constructor(
    readonly modelId: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`The model ${modelId} is at capacity; retry after ${retryAfterSeconds} s.`);
    this.name = 'EngineOverloadedError';
  }
}

export class EngineNotReadyError extends Error {
  constructor(readonly modelId: string) {
    super(`The model ${modelId} is still loading.`);
    this.name = 'EngineNotReadyError';
  }
}

export class EngineCancelledError extends Error {
  constructor() {
    super('The job was cancelled.');
    this.name = 'EngineCancelledError';
  }
}

/** A runner failed; `message` comes from the worker and is for logs, not for clients. */
export class EngineFailedError extends Error {
  constructor(
    readonly modelId: string,
    message: string,
  ) {
    super(message);
    this.name = 'EngineFailedError';
  }
}

/**
 * Whether a job was refused for lack of capacity (every replica busy and the queue full, or the model still
 * loading): the client is told to retry. Such refusals are logged at warn, never at error — they are load,
 * not a fault an operator must fix.
 */
export function isCapacityError(err: unknown): boolean {
  return err instanceof EngineOverloadedError || err instanceof EngineNotReadyError;
}
