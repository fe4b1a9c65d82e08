/**
 * Which PostgreSQL driver failures are an outage (503, retry) and which are not (500: retrying would not
 * help), and the Store wrapper that turns the former into StoreUnavailableError. The whole path, with a
 * real server stopped under Kuma, is test/integration/postgres-outage.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isOutage, reportingOutages } from '../../../src/store/postgres/pg-outage.js';
import { StoreUnavailableError } from '../../../src/store/store-errors.js';
import type { Store } from '../../../src/store/store.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isOutage', () => {
  it.each(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'ETIMEDOUT', 'EHOSTUNREACH', '08006', '08001', '57P01', '57P03', '53300'])('%s is an outage', (code) => {
    expect(isOutage(coded(code))).toBe(true);
  });
  it.each(['Connection terminated unexpectedly', 'timeout exceeded when trying to connect', 'Client has encountered a connection error and is not queryable'])(
    '"%s" is an outage',
    (message) => {
      expect(isOutage(new Error(message))).toBe(true);
    },
  );
  it.each([
    ['a unique violation', coded('23505', 'duplicate key value')],
    ['a syntax error', coded('42601', 'syntax error at or near')],
    ['a serialization failure', coded('40001', 'could not serialize access')],
    ['an unsafe BIGINT', new RangeError("BIGINT 9007199254740993 is outside JavaScript's safe integer range")],
    ['a client we closed ourselves', new Error('Client was closed and is not queryable')],
    ['not an Error', 'ECONNREFUSED'],
  ])('%s is not', (_, error) => {
    expect(isOutage(error)).toBe(false);
  });
});

describe('reportingOutages', () => {
  const failing = (error: unknown) => ({ countAccounts: async () => Promise.reject(error), close: async () => {} }) as unknown as Store;

  it('rethrows an outage as StoreUnavailableError, keeping the cause and a short public reason', async () => {
    const cause = coded('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432');
    const error = await reportingOutages(failing(cause))
      .countAccounts()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({
      reason: 'ECONNREFUSED',
      cause,
      message: 'The account database is unavailable: ECONNREFUSED: connect ECONNREFUSED 10.0.0.5:5432',
    });
  });

  it('passes every other failure through unchanged, and results as they are', async () => {
    const duplicate = coded('23505', 'duplicate key value');
    await expect(reportingOutages(failing(duplicate)).countAccounts()).rejects.toBe(duplicate);
    const working = { countAccounts: async () => 3 } as unknown as Store;
    await expect(reportingOutages(working).countAccounts()).resolves.toBe(3);
  });
});
