/**
 * Child process, started once at start by execution-providers.ts: which onnxruntime execution providers the
 * installed onnxruntime-node can actually run here.
 *
 * `listSupportedBackends()` names the providers the binding was built with, but on linux/x64 it lists `cuda`
 * and `tensorrt` as "not bundled" whether or not their libraries were ever installed (they are downloaded at
 * `npm install`, which an offline or `--onnxruntime-node-install=skip` install does not do), and a GPU
 * provider also needs the CUDA libraries, a driver and a device. So each provider is tried for real: a
 * session of a one-matrix graph is created with that provider alone and run once.
 *
 * Why a child: a provider that fails to load writes onnxruntime's native error lines straight to file
 * descriptor 2, which here is a pipe the parent reads (they explain the failure; in the server's own
 * stderr they would be noise before its message), a GPU context made for the check goes away with the
 * child, and a driver that crashes takes only the check down.
 *
 * Protocol: the parent sends `{ requested }` and gets one ProbeReport back. Before each try the child writes
 * PROBE_MARK + the provider's name as a line of its own to stderr (pipes are written synchronously on
 * Linux), so the parent can tell which try the native lines that follow belong to.
 */
import ort from 'onnxruntime-node';
import { GraphBuilder } from './graph-builder.js';
import { PROBE_MARK, type ProbeReport, type ProbeRequest } from './execution-providers.js';

/** y = x · W: a MatMul, so a GPU provider loads its math libraries (cuBLAS) as a real model would. */
function probeGraph(): Uint8Array {
  const g = new GraphBuilder('kuma_provider_probe');
  const x = g.input('x', 'float', [1, 4]);
  const w = g.floats([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], [4, 4]);
  g.op('MatMul', [x, w], {}, 'y');
  g.output('y', 'float', [1, 4]);
  return g.toBytes();
}

async function tryProvider(name: string, model: Uint8Array): Promise<string | null> {
  process.stderr.write(`${PROBE_MARK}${name}\n`);
  try {
    const session = await ort.InferenceSession.create(model, { executionProviders: [name], logSeverityLevel: 3 });
    try {
      const x = new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]);
      const { y } = await session.run({ x });
      if ((y!.data as Float32Array)[3] !== 4) return 'it ran the check graph but returned a wrong result';
    } finally {
      await session.release();
    }
    return null;
  } catch (err) {
    return ((err as Error)?.message ?? String(err)).trim();
  }
}

/** Tries the requested providers; when one of them cannot run, the others the binding lists too, so the
 * refusal can say what would work. */
export async function probeProviders(requested: readonly string[]): Promise<ProbeReport> {
  const backends = ort.listSupportedBackends().map(({ name, bundled }) => ({ name, bundled }));
  const known = new Set(backends.map((b) => b.name));
  const model = probeGraph();
  const tried: Record<string, string | null> = {};
  for (const name of requested) if (name !== 'cpu' && known.has(name)) tried[name] = await tryProvider(name, model);
  const refused = requested.some((name) => name !== 'cpu' && tried[name] !== null);
  if (refused) for (const { name } of backends) if (name !== 'cpu' && !(name in tried)) tried[name] = await tryProvider(name, model);
  return { version: ort.env.versions.node ?? 'unknown', platform: `${process.platform}/${process.arch}`, backends, tried };
}

// As a child process: answer one request, then leave (exiting at once: a CUDA context torn down at exit
// can crash some drivers, and the report is already out).
if (process.send && process.env.KUMA_PROVIDER_PROBE === '1') {
  process.once('message', (message: ProbeRequest) => {
    void probeProviders(message.requested).then(
      (report) => process.send!(report, () => process.exit(0)),
      (err: Error) => {
        process.stderr.write(`${err?.message ?? err}\n`);
        process.exit(1);
      },
    );
  });
}
