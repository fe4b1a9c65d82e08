/**
 * Request ids: `req_` and 24 hex digits (96 random bits). Drawn from a pooled buffer refilled 4 KiB at a
 * time, because a crypto.randomBytes call per request was the largest single cost of a small request
 * (≈ 10 % of the I/O thread's CPU on GET /models).
 */
import { randomFillSync } from 'node:crypto';

const ID_BYTES = 12;
const pool = Buffer.allocUnsafe(ID_BYTES * 341); // 4092 bytes: one refill serves 341 requests
let offset = pool.length;

export function newRequestId(): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = `req_${pool.toString('hex', offset, offset + ID_BYTES)}`;
  offset += ID_BYTES;
  return id;
}
