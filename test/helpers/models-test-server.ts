/**
 * An in-process test server over model engines built from manifest entries — usually `custom` runners from
 * test/fixtures/engines (the default `dir` of an entry). The manifest lives in a temp folder; close() stops
 * the server, then the engines, then removes the folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { startTestServer, type TestServer } from './test-server.js';

const FIXTURE_ENGINES = path.resolve('test/fixtures/engines');

export async function startTestServerWithModels(
  models: Array<Record<string, unknown>>,
  options: Omit<Parameters<typeof startTestServer>[0] & object, 'engines'> = {},
): Promise<TestServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-models-'));
  const manifest = path.join(dir, 'manifest.json');
  fs.writeFileSync(manifest, JSON.stringify({ models: models.map((m) => ({ dir: FIXTURE_ENGINES, ...m })) }));
  const engines = EngineRegistry.fromManifest(manifest, 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  const t = await startTestServer({ ...options, engines });
  await t.server.enginesReady;
  return {
    ...t,
    close: async () => {
      await t.close();
      await engines.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
