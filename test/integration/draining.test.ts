/**
 * KUMA_DRAIN_DELAY_MS: once the server is told to stop, /readyz answers 503 naming the draining state while
 * the node goes on serving for the delay (a load balancer's health check takes it out of rotation), and
 * only then stops listening.
 */
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { startTestServer } from '../helpers/test-server.js';

it('answers /readyz 503 (draining) while still serving for the drain delay, then stops listening', async () => {
  const t = await startTestServer({ config: { drainDelayMs: 1500 } });
  try {
    expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(200);
    const closing = t.server.close();
    const readiness = await fetch(`${t.baseUrl}/readyz`);
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toMatchObject({
      status: 'not_ready',
      checks: expect.arrayContaining([{ name: 'lifecycle', ready: false, detail: expect.stringMatching(/draining/) }]),
    });
    // Still serving the API during the delay.
    const models = await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(models.status).toBe(200);
    await closing;
    await expect(fetch(`${t.baseUrl}/healthz`)).rejects.toThrow();
    expect(t.logs.join('')).toMatch(/draining: \/readyz answers 503/);
  } finally {
    await t.server.close();
    fs.rmSync(t.dir, { recursive: true, force: true });
  }
});
