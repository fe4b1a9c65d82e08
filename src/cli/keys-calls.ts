/**
 * The call records shown by `npm run keys -- usage`: one line per finished phone call with what it
 * processed and what it cost. Call records sit beside the usage rows (whose per-turn charges they sum up).
 */
import type { CallRecord } from '../store/store.js';

export const CALL_ROWS_SHOWN = 50;

/** 12345 ms → "12.3 s". */
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function callLines(calls: CallRecord[], formatUnits: (micros: number) => string): string[] {
  const shown = calls.slice(-CALL_ROWS_SHOWN);
  if (shown.length === 0) return [];
  const lines = [
    `Calls (last ${shown.length}): start  call  account  carrier  mode  duration  turns  caller audio  characters synthesized/translated  cost  end`,
  ];
  for (const c of shown) {
    lines.push(
      `${c.startedAt}  ${c.id}  ${c.accountId}  ${c.carrier}  ${c.mode}  ${seconds(c.durationMs)}  ${c.turns} turns` +
        `  caller ${c.callerSeconds.toFixed(1)} s  chars ${c.charactersSynthesized}/${c.charactersTranslated}  ${formatUnits(c.costMicros)}  ${c.endReason}`,
    );
  }
  return lines;
}
