// The third-party clients (LiveKit's agents and plugins, the OpenAI Agents SDK, the ElevenLabs SDK) are heavy — LiveKit
// brings a native RTC binary — so they live in this separate package, out of the install a Kuma user runs.
// `.ci/run` installs it (`npm ci --prefix test/clients`) and sets KUMA_REQUIRE_CLIENTS=1, so there a missing install
// fails; elsewhere these suites are skipped with a note saying how to run them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));

export const clientsInstalled = fs.existsSync(path.join(here, 'node_modules', '.package-lock.json'));

if (!clientsInstalled && process.env.KUMA_REQUIRE_CLIENTS === '1') {
  throw new Error('KUMA_REQUIRE_CLIENTS=1 but the client test package is not installed: run `npm ci --prefix test/clients`');
}

/** `describe` when the client package is installed; otherwise a skipped suite (say once how to run it). */
export const describeClients: typeof describe = clientsInstalled
  ? describe
  : (((name: string, ...rest: unknown[]) => {
      console.warn(`skipped "${name}": the third-party clients are not installed (npm ci --prefix test/clients)`);
      return (describe.skip as (...args: unknown[]) => unknown)(name, ...rest);
    }) as unknown as typeof describe);
