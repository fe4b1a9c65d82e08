/**
 * What the SIGKILL billing test (run.ts) compares: the usage rows the SQLite store kept, and what the clients
 * received (clients.ts). Per surface and per server life ("epoch"):
 * - charged, not delivered: a row for work the client did not get in full — must be 0;
 * - delivered, not charged: work the client got in full with no row. Charging after delivery leaves a window
 *   (delivery confirmed → settlement committed) in which a kill loses the charge; such a unit must have been
 *   delivered within LOSS_WINDOW_MS of the kill, and a speech socket may lose only its last phrase;
 * - wrong quantity: a row whose quantity differs from what the answer reported (must be 0).
 */
import Database from 'better-sqlite3';
import type { Records } from './clients.js';

/** How close to the kill a delivered unit's charge may be lost (delivery → settlement committed, with margin). */
export const LOSS_WINDOW_MS = 1000;

export interface SurfaceTally {
  delivered: number;
  rows: number;
  chargedNotDelivered: number;
  deliveredNotCharged: number;
  /** Of deliveredNotCharged: lost outside what the window allows (a failure). */
  lostOutsideWindow: number;
  wrongQuantity: number;
}

export interface EpochReport {
  rest: SurfaceTally;
  realtime: SurfaceTally;
  sockets: SurfaceTally;
  /** Rows whose request id no client of this epoch knows (nothing received at all): charged, not delivered. */
  unknownRows: number;
}

interface Row {
  request_id: string;
  quantity: number;
}

const empty = (): SurfaceTally => ({ delivered: 0, rows: 0, chargedNotDelivered: 0, deliveredNotCharged: 0, lostOutsideWindow: 0, wrongQuantity: 0 });
const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

/** Every usage row of the store, grouped by request id (in id order). */
export function readRows(dbPath: string): Map<string, number[]> {
  const db = new Database(dbPath, { readonly: true });
  try {
    const byRequest = new Map<string, number[]>();
    for (const row of db.prepare('SELECT request_id, quantity FROM usage_records ORDER BY id').all() as Row[]) {
      byRequest.set(row.request_id, [...(byRequest.get(row.request_id) ?? []), row.quantity]);
    }
    return byRequest;
  } finally {
    db.close();
  }
}

/** Compares one epoch's records with the rows, consuming the rows it explains (what is left is unknown). */
export function compareEpoch(records: Records, killedAt: number, rows: Map<string, number[]>): EpochReport {
  const report: EpochReport = { rest: empty(), realtime: empty(), sockets: empty(), unknownRows: 0 };
  const take = (id: string | null): number[] => {
    if (!id) return [];
    const found = rows.get(id) ?? [];
    rows.delete(id);
    return found;
  };
  const lost = (tally: SurfaceTally, at: number) => {
    tally.deliveredNotCharged++;
    if (killedAt - at > LOSS_WINDOW_MS) tally.lostOutsideWindow++;
  };

  for (const outcome of records.rest) {
    const charged = take(outcome.requestId);
    const r = report.rest;
    r.rows += charged.length;
    if (outcome.delivered) r.delivered++;
    if (!outcome.delivered) r.chargedNotDelivered += charged.length;
    else if (charged.length === 0) lost(r, outcome.at);
    else if (charged.length !== 1 || !close(charged[0]!, outcome.quantity!)) r.wrongQuantity++;
  }

  for (const session of records.realtime) {
    const charged = [...take(session.requestId)];
    const r = report.realtime;
    r.rows += charged.length;
    r.delivered += session.completed.length;
    // Items of one session are all the same phrase: match them as a multiset of seconds.
    for (const item of session.completed) {
      const i = charged.findIndex((q) => close(q, item.seconds));
      if (i >= 0) charged.splice(i, 1);
      else lost(r, item.at);
    }
    r.chargedNotDelivered += charged.length;
  }

  for (const socket of records.sockets) {
    const charged = take(socket.requestId);
    const r = report.sockets;
    r.rows += charged.length;
    const receivedMs = socket.bytes / 32;
    // A phrase was received whole when the next one began (the server sends it only after), the socket ended
    // normally, or its end on the audio clock is within the bytes received.
    const whole = socket.phrases.filter((p, i) => i < socket.phrases.length - 1 || socket.finished || receivedMs >= p.endMs);
    // The alignment puts a space after each phrase: as the sentences sent end with one, its length is the charge.
    const billed = whole.map((p) => p.characters);
    r.delivered += billed.length;
    for (let i = 0; i < charged.length; i++) {
      if (i >= billed.length) r.chargedNotDelivered++;
      else if (charged[i] !== billed[i]) r.wrongQuantity++;
    }
    const missing = billed.length - charged.length;
    if (missing > 0) {
      r.deliveredNotCharged += missing;
      // Only the last phrase delivered may miss its charge: the one in flight at the kill.
      if (missing > 1 || socket.finished) r.lostOutsideWindow += missing;
    }
  }
  return report;
}

/** Rows no client explained, for every epoch together: charged with nothing received. */
export function unexplained(rows: Map<string, number[]>): number {
  let n = 0;
  for (const quantities of rows.values()) n += quantities.length;
  return n;
}
