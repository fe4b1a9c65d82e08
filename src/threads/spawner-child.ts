/**
 * The process spawner's child (see process-spawner.ts): a small Node process that starts programs for the
 * server and hands their stdin, stdout and stderr pipes back over the IPC channel, then reports how each
 * one exited. It keeps no copy of the pipes (a handle sent is closed here), so a program sees end of input
 * when the server closes its stdin or dies, exactly as if the server had started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { SpawnerReply, SpawnerRequest } from './process-spawner.js';
import { ignoreGroupStopSignals } from './group-signals.js';

// Stopped by the server, not by a signal to its process group (see group-signals.ts).
ignoreGroupStopSignals();

const children = new Map<number, ChildProcess>();

function reply(message: SpawnerReply, handle?: Socket): void {
  if (!process.connected) return;
  process.send!(message, handle, (error: Error | null) => {
    // The server went away while a reply was on its way: its 'disconnect' below cleans up.
    if (error) return;
  });
}

function start(request: Extract<SpawnerRequest, { type: 'spawn' }>): void {
  const { id } = request;
  let child: ChildProcess;
  let pipes: [Socket, Socket, Socket];
  try {
    // Its own process group: a stop signal sent to the server's group must not end a program (ffmpeg) under
    // a response the server is still finishing (group-signals.ts); it ends when the server closes its input,
    // or is killed by the server or by this helper.
    child = spawn(request.command, request.args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    pipes = [child.stdin, child.stdout, child.stderr] as [Socket, Socket, Socket];
    // Node starts reading a child's output at once; stop that at the pipe before the event loop runs, so
    // that no byte (and no end-of-file) is taken here: the output belongs to the server. pause() would not
    // do: it only stops delivery, the socket still reads, sees end-of-file and closes the pipe.
    for (const pipe of [pipes[1], pipes[2]]) (pipe as unknown as { _handle?: { readStop?(): number } })._handle?.readStop?.();
    // And detach the pipes from the ChildProcess: when a program exits, Node destroys its stdin and drains
    // its output; a program that exits before its pipes are sent would otherwise lose them.
    child.stdin = child.stdout = child.stderr = null;
    child.stdio.fill(null);
  } catch (error) {
    reply({ type: 'error', id, message: error instanceof Error ? error.message : String(error) });
    return;
  }
  let started = false;
  child.once('spawn', () => {
    started = true;
    children.set(id, child);
    // Pipes first, then 'spawned': the server has all three sockets when it learns the process runs.
    reply({ type: 'stdio', id, fd: 0 }, pipes[0]);
    reply({ type: 'stdio', id, fd: 1 }, pipes[1]);
    reply({ type: 'stdio', id, fd: 2 }, pipes[2]);
    reply({ type: 'spawned', id, pid: child.pid! });
  });
  child.once('error', (error) => {
    if (started) return;
    for (const pipe of pipes) pipe.destroy();
    reply({ type: 'error', id, message: error.message });
  });
  child.once('exit', (code, signal) => {
    children.delete(id);
    if (started) reply({ type: 'exit', id, code, signal });
  });
}

process.on('message', (request: SpawnerRequest) => {
  if (request.type === 'spawn') start(request);
});

// The server is gone (exited, crashed or killed): its programs must not outlive it.
process.on('disconnect', () => {
  for (const child of children.values()) child.kill('SIGKILL');
  process.exit(0);
});
