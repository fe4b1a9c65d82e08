/**
 * A REST response's charge is settled after its last bytes were delivered (README "Accounts, keys and
 * prices"), so a client can hold its whole answer a moment before the usage row, the debit and the usage
 * metric land. The server finishes a request only once its charge is settled: wait for that.
 */
import { expect } from 'vitest';
import type { TestServer } from './test-server.js';

/** Resolves once the server has finished every HTTP request (and so recorded every charge) answered so far. */
export async function chargesSettled(t: TestServer): Promise<void> {
  await expect.poll(() => t.server.requestsInFlight()).toBe(0);
}
