/**
 * KUMA_ENGINE_EXECUTION_PROVIDERS, checked once at start against the onnxruntime-node installed here, so that a
 * server asked for `cuda` on a machine that cannot run it stops before it serves anything, saying why, what
 * would work and how to install the CUDA build. Otherwise every model would fail to load in its worker, or,
 * worse, silently run somewhere the operator did not choose.
 *
 * `cpu` alone, or nothing, is what Kuma always did: no check, no onnxruntime loaded in the main thread, and
 * sessions created without the option (session.ts). Anything else is tried for real in a child process
 * (provider-probe.ts explains why listSupportedBackends() alone cannot tell).
 */
import type { ChildProcess } from 'node:child_process';
import { spawnChild } from '../../threads/spawn-child.js';

/** The line provider-probe.ts writes to its stderr before trying a provider. */
export const PROBE_MARK = 'kuma-provider-probe: ';

export interface ProbeRequest {
  requested: string[];
}

export interface ProbeReport {
  /** onnxruntime-node's version. */
  version: string;
  /** `platform/arch`, as onnxruntime-node's install script names them (linux/x64). */
  platform: string;
  /** What the binding says it was built with. */
  backends: { name: string; bundled: boolean }[];
  /** Providers tried: null = it ran the check graph; otherwise onnxruntime's error. `cpu` is never tried. */
  tried: Record<string, string | null>;
}

/** A provider list this onnxruntime-node cannot run; the message says why, what can, and what to install. */
export class ExecutionProviderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExecutionProviderError';
  }
}

/** Creating a CUDA context and loading cuDNN/cuBLAS takes seconds; a hung driver must not hang the start. */
const PROBE_TIMEOUT_MS = 60_000;
const PROBE_MODULE = new URL(`./provider-probe${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export function onCpuOnly(names: readonly string[]): boolean {
  return names.every((name) => name === 'cpu');
}

/** Resolves when every provider named can run here; throws ExecutionProviderError otherwise. */
export async function checkExecutionProviders(names: readonly string[], timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  if (onCpuOnly(names)) return;
  const { report, stderr } = await probe([...names], timeoutMs);
  const refused = names.filter((name) => name !== 'cpu' && report.tried[name] !== null);
  if (refused.length) throw new ExecutionProviderError(refusal(names, refused, report, nativeDetails(stderr)));
}

function probe(requested: string[], timeoutMs: number): Promise<{ report: ProbeReport; stderr: string }> {
  const child = spawnChild(PROBE_MODULE, { env: { ...process.env, KUMA_PROVIDER_PROBE: '1' } });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout!.resume();
  return new Promise((resolve, reject) => {
    let report: ProbeReport | null = null;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stop(child);
      outcome();
    };
    const fail = (why: string) =>
      settle(() => reject(new ExecutionProviderError(`could not check it: ${why}${stderr.trim() ? `\n    ${lastLines(stderr)}` : ''}`)));
    const timer = setTimeout(() => fail(`onnxruntime-node did not answer within ${timeoutMs / 1000} s`), timeoutMs);
    // The report is complete once it arrives: the child is stopped then (whatever a driver does while it tears
    // down does not matter), and read to the end of its stderr, whose native lines may trail the message.
    child.once('message', (message: ProbeReport) => {
      report = message;
      stop(child);
    });
    child.once('close', (code, signal) => {
      if (report) settle(() => resolve({ report: report!, stderr }));
      else fail(`the check process ended (${signal ?? `exit code ${code}`}) before it answered`);
    });
    child.once('error', (err) => fail(err.message));
    child.send({ requested } satisfies ProbeRequest);
  });
}

function stop(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** How onnxruntime's log line of a library that failed to load introduces the loader's reason. */
const WITH_ERROR = ' with error: ';

/** onnxruntime's native error lines per provider tried, by the probe's marks (the library it failed to load). */
function nativeDetails(stderr: string): Record<string, string> {
  const details: Record<string, string> = {};
  let current: string | null = null;
  for (const raw of stderr.split('\n')) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '').trim();
    if (line.startsWith(PROBE_MARK)) current = line.slice(PROBE_MARK.length);
    else if (current && line.includes(WITH_ERROR)) details[current] = line.slice(line.lastIndexOf(WITH_ERROR) + WITH_ERROR.length).trim();
  }
  return details;
}

/** onnxruntime's message without the source location and assertion it often starts with. */
function plain(message: string): string {
  const firstLine = message.split('\n')[0]!;
  const assertion = ' was false. ';
  const afterAssertion = firstLine.includes(assertion) ? firstLine.slice(firstLine.indexOf(assertion) + assertion.length) : firstLine;
  return afterAssertion.length > 240 ? `${afterAssertion.slice(0, 240)}…` : afterAssertion;
}

function refusal(names: readonly string[], refused: readonly string[], report: ProbeReport, details: Record<string, string>): string {
  const where = `onnxruntime-node ${report.version} on ${report.platform}`;
  const built = report.backends.map((b) => b.name);
  const lines = refused.map((name) => {
    if (!built.includes(name)) return `"${name}" is not an execution provider of ${where} (it has: ${built.join(', ')}).`;
    const detail = details[name] ? ` (${details[name]})` : '';
    return `"${name}" cannot run here: ${plain(report.tried[name]!)}${detail}.`;
  });
  const usable = ['cpu', ...Object.keys(report.tried).filter((name) => report.tried[name] === null)];
  const unusable = Object.keys(report.tried).filter((name) => report.tried[name] !== null && !refused.includes(name));
  lines.push(
    `Available in ${where}: ${usable.join(', ')}.` +
      (unusable.length ? ` Built in but not usable here: ${unusable.map((name) => `${name} (${plain(report.tried[name]!)})`).join('; ')}.` : ''),
  );
  if (refused.some((name) => name === 'cuda' || name === 'tensorrt')) lines.push(cudaHint(report));
  lines.push(`Asked for: ${names.join(',')}. Unset the variable, or set it to cpu, to run every model on the CPU.`);
  return lines.join('\n    ');
}

/**
 * How to get the CUDA build, as onnxruntime-node documents it (its README "CUDA EP Installation" and
 * script/install.js): on linux/x64 the package's install script downloads the CUDA 12 provider libraries
 * from NuGet unless told to skip; `--onnxruntime-node-install`, or ONNXRUNTIME_NODE_INSTALL=1, forces it.
 * (In 1.30.0 the value form `=cuda12` of that flag is read as "not set", so the bare form is given.)
 */
function cudaHint(report: ProbeReport): string {
  if (report.platform !== 'linux/x64') return `onnxruntime-node ships its CUDA and TensorRT providers for linux/x64 only; this is ${report.platform}.`;
  return (
    `The CUDA build of onnxruntime-node is the same package plus its CUDA 12 provider libraries, which its install script ` +
    `downloads from NuGet (Microsoft.ML.OnnxRuntime.Gpu.Linux ${report.version}) unless the install was offline or skipped ` +
    `(Kuma's .npmrc sets onnxruntime-node-install=skip, so npm ci never fetches them). ` +
    `Install them with: ONNXRUNTIME_NODE_INSTALL=1 npm rebuild onnxruntime-node ` +
    `(the machine then needs an NVIDIA driver, CUDA 12 and cuDNN 9; tensorrt also needs TensorRT).`
  );
}

function lastLines(text: string): string {
  return text
    .replace(/\x1b\[[0-9;]*m/g, '')
    .trim()
    .split('\n')
    .slice(-3)
    .join('\n    ');
}
