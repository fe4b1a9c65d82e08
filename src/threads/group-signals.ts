/**
 * For Kuma's helper child processes (the decoder processes, the program spawner): they stop when the
 * server says so — it closes them at shutdown, after in-flight work has had its grace period — or when
 * the server is gone (their IPC channel closes: see each child's 'disconnect' handler).
 *
 * A stop signal sent to the server's whole process group (Ctrl-C in a terminal sends SIGINT to it, a
 * closing terminal SIGHUP, `kill -- -PGID` or a supervisor's group kill SIGTERM) reached them too, and
 * killed them under the uploads the server was still finishing: the pool then failed those with "the
 * audio decoder failed on this file" (a 400 telling the client its valid file was bad) and "decoder
 * restarted" (a 503), all logged as errors (issue P12 point 8). So they start in a process group of
 * their own (spawn-child.ts), and ignore these signals once running, for a signal sent to every process
 * of the server's cgroup (systemd's default KillMode=control-group); SIGKILL still ends them.
 */
export function ignoreGroupStopSignals(): void {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => {});
}
