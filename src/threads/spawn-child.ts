/**
 * Starts a Node child process running a module, with an IPC channel that carries structured clones
 * (`serialization: 'advanced'`: typed arrays cross as typed arrays, not as JSON). The companion of
 * spawn-worker.ts for work that must be able to die alone: a V8 out-of-memory or a native abort in a
 * worker thread takes the whole process down, in a child only the child.
 *
 * Under tsx (development, tests, `npm start`) the module is a `.ts` file: the child gets tsx's loader
 * with `--import`, resolved to an absolute URL here so that it does not depend on the child's working
 * directory. A compiled `.js` module is started directly. The parent's own execArgv (a test runner's
 * flags, `--inspect`) is not passed on: only `execArgv` given here.
 *
 * The child leads a process group of its own, so a stop signal sent to the server's group (Ctrl-C in a
 * terminal, `kill -- -PGID`, a supervisor's group kill) does not reach it, not even while it is still
 * starting: the server stops its children itself, once in-flight work has had its grace period, and a
 * child ends when its IPC channel closes (the server gone). See group-signals.ts for the rest.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

export interface SpawnChildOptions {
  /** Node flags for the child, e.g. `--max-old-space-size=512`. */
  execArgv?: string[];
  /** Environment; default the parent's. */
  env?: NodeJS.ProcessEnv;
  /** What happens to the child's stdout and stderr; default both piped (read them, or they fill up). */
  output?: 'pipe' | 'ignore' | 'inherit';
}

export function spawnChild(moduleUrl: URL, options: SpawnChildOptions = {}): ChildProcess {
  const loader = moduleUrl.pathname.endsWith('.ts') ? ['--import', tsxLoaderUrl()] : [];
  const output = options.output ?? 'pipe';
  return fork(moduleUrl, [], {
    execArgv: [...loader, ...(options.execArgv ?? [])],
    env: options.env ?? process.env,
    serialization: 'advanced',
    stdio: ['ignore', output, output, 'ipc'],
    detached: true,
  });
}

function tsxLoaderUrl(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
}
