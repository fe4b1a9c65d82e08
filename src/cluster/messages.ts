/** What a worker process tells the primary over the cluster IPC channel. */
export type WorkerMessage =
  /** The worker's HTTP server is listening. */
  | { kuma: 'listening'; port: number }
  /** Its models are loaded and warm: it can take a full share of the load (rolling restarts wait for this). */
  | { kuma: 'ready' }
  /** Its models failed to load: it answers, but /readyz says not-ready. */
  | { kuma: 'not-ready'; reason: string };

export function isWorkerMessage(message: unknown): message is WorkerMessage {
  return typeof message === 'object' && message !== null && typeof (message as { kuma?: unknown }).kuma === 'string';
}

/** Environment the primary gives each worker. */
export const WORKER_INDEX_ENV = 'KUMA_WORKER_INDEX';
