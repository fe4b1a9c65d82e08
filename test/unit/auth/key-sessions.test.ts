/**
 * The open-sessions registry on a real SQLite store: a revocation by this process (through the wrapped store)
 * ends the key's sessions at once; one by another connection is found by the sweep, which asks the store one
 * question for all the keys with sessions, and none at all while no session is open; a session that ended on
 * its own is not ended again; a failing end callback or sweep costs nothing else.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeySessions, withRevocationEnding } from '../../../src/auth/key-sessions.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

let dir: string;
let store: Store;
let other: Store;
let keys: string[];
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-key-sessions-'));
  store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
  other = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
  const account = await store.createAccount('a', 0);
  keys = [];
  for (const c of 'abc') keys.push((await store.createKey(account.id, c.repeat(64), c)).id);
});
afterEach(async () => {
  await other.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('KeySessions', () => {
  it("this process's revocation ends every session of the key at once, and only those", async () => {
    const sessions = new KeySessions(store, { periodMs: 60_000 });
    const ended: string[] = [];
    sessions.register(keys[0]!, () => ended.push('a1'));
    sessions.register(keys[0]!, () => ended.push('a2'));
    sessions.register(keys[1]!, () => ended.push('b'));
    expect(await withRevocationEnding(store, sessions).revokeKey(keys[0]!)).toBe(true);
    expect(ended).toEqual(['a1', 'a2']);
    expect(sessions.size).toBe(1);
    // Revoking an unknown or already revoked key ends nothing.
    expect(await withRevocationEnding(store, sessions).revokeKey(keys[0]!)).toBe(false);
    expect(ended).toEqual(['a1', 'a2']);
    sessions.close();
  });

  it("the sweep asks once for every key with sessions, ends the revoked ones' sessions, and asks nothing when none is open", async () => {
    const ask = vi.spyOn(store, 'inactiveKeyIds');
    const sessions = new KeySessions(store, { periodMs: 60_000 });
    await sessions.sweep();
    expect(ask).not.toHaveBeenCalled();
    const ended: string[] = [];
    const gone = sessions.register(keys[2]!, () => ended.push('c'));
    sessions.register(keys[0]!, () => ended.push('a'));
    sessions.register(keys[1]!, () => ended.push('b'));
    gone(); // ended on its own: unregistered
    await other.revokeKey(keys[1]!);
    await other.revokeKey(keys[2]!);
    await sessions.sweep();
    expect(ask).toHaveBeenCalledTimes(1);
    expect([...ask.mock.calls[0]![0]].sort()).toEqual([keys[0], keys[1]].sort());
    expect(ended).toEqual(['b']);
    expect(sessions.size).toBe(1);
    sessions.close();
  });

  it('runs the sweep on its own every period while sessions are open', async () => {
    const sessions = new KeySessions(store, { periodMs: 100 });
    const ended = new Promise<void>((resolve) => sessions.register(keys[0]!, resolve));
    await other.revokeKey(keys[0]!);
    await ended;
    expect(sessions.size).toBe(0);
    sessions.close();
  });

  it('an end callback that throws, or a sweep that fails, leaves the rest working', async () => {
    const endErrors: unknown[] = [];
    const sweepErrors: unknown[] = [];
    const sessions = new KeySessions(store, { periodMs: 60_000, onEndError: (e) => endErrors.push(e), onSweepError: (e) => sweepErrors.push(e) });
    const ended: string[] = [];
    sessions.register(keys[0]!, () => {
      throw new Error('bug');
    });
    sessions.register(keys[0]!, () => ended.push('second'));
    sessions.revoked(keys[0]!);
    expect(ended).toEqual(['second']);
    expect(endErrors).toHaveLength(1);
    sessions.register(keys[1]!, () => ended.push('b'));
    vi.spyOn(store, 'inactiveKeyIds').mockRejectedValueOnce(new Error('store unreachable'));
    await sessions.sweep();
    expect(sweepErrors).toHaveLength(1);
    expect(sessions.size).toBe(1); // still registered: the next sweep asks again
    sessions.close();
  });
});
