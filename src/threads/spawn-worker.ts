/**
 * Starts a worker thread from a module URL. Under tsx (development, tests, `npm start`) the module is a
 * `.ts` file, which Node 20 cannot load in a worker by itself (`--import tsx` in execArgv is not enough on
 * 20.20), so a tiny ESM bootstrap registers tsx's loader inside the worker first. A compiled `.js` module
 * is started directly.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

export function spawnWorker(moduleUrl: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  if (!moduleUrl.pathname.endsWith('.ts')) return new Worker(moduleUrl, options);
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}
