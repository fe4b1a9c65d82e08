/**
 * Ends a streamed response's source however the stream ends — finished, failed, abandoned mid-way by the
 * client, or never consumed at all (the client left before the transport started writing, so no `finally`
 * inside the stream would run: the engine job is stopped here) — and runs `onEnd` exactly once, as soon as
 * the consumer stops, before the source's own cleanup. The routes' charges no longer settle here: they wait
 * for the delivery of the whole response (ApiResult.onDelivered, api/charge-on-delivery.ts).
 */

/** `onEnd` reports its own failures (logs them): a rejection here is swallowed, never left unhandled. */
export function closeWhenDone<T>(source: AsyncGenerator<T>, onEnd: () => Promise<void>, signal: AbortSignal): AsyncGenerator<T> {
  let started = false;
  let ending: Promise<void> | undefined;
  const end = () => (ending ??= onEnd().catch(() => {}));
  const onAbort = () => {
    if (started) return; // the running stream's finally closes it
    void source.return(undefined);
    void end();
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });

  return (async function* () {
    started = true;
    try {
      // Closed already (the client left before the first pull): nothing is produced, nothing more charged.
      if (ending) return;
      for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
    } finally {
      signal.removeEventListener('abort', onAbort);
      // What the consumer took is final once it stops pulling: close the reservation first, then let the
      // source clean up (an engine job may take its time to acknowledge a cancel; billing does not wait).
      const closing = end();
      await source.return(undefined).catch(() => {});
      await closing;
    }
  })();
}
