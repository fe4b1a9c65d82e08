/**
 * What every native test needs: a server whose clock is before the retirement date (the native routes are
 * served) with the demo models, and the Djelia JS SDK's axios instance — created with `x-api-key` and a JSON
 * Content-Type, which it also sends again on every request.
 */
import axios, { type AxiosInstance } from 'axios';
import { startTestServer, type TestServer } from '../../helpers/test-server.js';

/** A day before the default retirement date (2026-09-20): the native surface is served, deprecated. */
export const BEFORE_RETIREMENT = new Date('2026-09-01T00:00:00Z');

export async function startNativeServer(clock: () => Date = () => BEFORE_RETIREMENT): Promise<TestServer> {
  const t = await startTestServer({ clock, config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
  return t;
}

export function jsSdkAxios(apiKey: string): { client: AxiosInstance; headers: Record<string, string> } {
  const headers = { 'x-api-key': apiKey, 'Content-Type': 'application/json' };
  return { client: axios.create({ timeout: 30000, headers }), headers };
}
