/**
 * The process spawner starts programs from a helper process and hands their pipes to this one: data flows
 * both ways, exits are reported with code and signal, a program that cannot start says why, a kill asked
 * before the program started still lands, and a helper that dies takes its programs with it and is
 * replaced on the next spawn.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessSpawner } from '../../../src/threads/process-spawner.js';
import { isRunning, until } from '../../helpers/processes.js';

const spawners: ProcessSpawner[] = [];
afterEach(() => {
  for (const spawner of spawners.splice(0)) spawner.close();
});

function newSpawner(): ProcessSpawner {
  const spawner = new ProcessSpawner();
  spawners.push(spawner);
  return spawner;
}

describe('ProcessSpawner', () => {
  it('runs a program with its stdin, stdout and stderr in this process, and reports its exit', async () => {
    const spawner = newSpawner();
    const proc = spawner.spawn('sh', ['-c', 'cat; echo done >&2; exit 3']);
    const { stdin, stdout, stderr } = await proc.started;
    expect(proc.pid).toBeGreaterThan(0);
    expect(proc.pid).not.toBe(spawner.helperPid);
    let out = '';
    let err = '';
    stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
    stderr.setEncoding('utf8').on('data', (text: string) => (err += text));
    const payload = 'x'.repeat(300_000); // more than one pipe buffer: back-pressure works across the hand-over
    stdin.end(payload);
    expect(await proc.exited).toEqual({ code: 3, signal: null });
    expect(out).toBe(payload);
    expect(err).toBe('done\n');
    expect(proc.exitCode).toBe(3);
  });

  it('a program that writes and exits at once still hands over its pipes with all it wrote', async () => {
    const proc = newSpawner().spawn('sh', ['-c', 'echo out; echo err >&2; exit 1']);
    const { stdout, stderr } = await proc.started;
    let out = '';
    let err = '';
    stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
    stderr.setEncoding('utf8').on('data', (text: string) => (err += text));
    expect(await proc.exited).toEqual({ code: 1, signal: null });
    expect({ out, err }).toEqual({ out: 'out\n', err: 'err\n' });
  });

  it('says why a program cannot start, and its exit still resolves', async () => {
    const proc = newSpawner().spawn('/nonexistent/program', []);
    await expect(proc.started).rejects.toThrow(/ENOENT/);
    expect(await proc.exited).toEqual({ code: null, signal: null });
  });

  it('a kill asked before the program started is carried out once it has', async () => {
    const proc = newSpawner().spawn('sleep', ['30']);
    proc.kill();
    expect(await proc.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('when the helper dies its programs are killed, and the next spawn starts a new helper', async () => {
    const spawner = newSpawner();
    const proc = spawner.spawn('sleep', ['30']);
    await proc.started;
    const helper = spawner.helperPid!;
    process.kill(helper, 'SIGKILL');
    expect(await proc.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await until(() => !isRunning(proc.pid!), 10_000);

    const next = spawner.spawn('sh', ['-c', 'exit 0']);
    await next.started;
    expect(spawner.helperPid).not.toBe(helper);
    expect((await next.exited).code).toBe(0);
  });

  it('close() stops the helper and its programs', async () => {
    const spawner = newSpawner();
    const procs = [spawner.spawn('sleep', ['30']), spawner.spawn('sleep', ['30'])];
    await Promise.all(procs.map((proc) => proc.started));
    const helper = spawner.helperPid!;
    spawner.close();
    for (const proc of procs) expect((await proc.exited).signal).toBe('SIGKILL');
    await until(() => !isRunning(helper) && procs.every((proc) => !isRunning(proc.pid!)), 10_000);
  });
});
