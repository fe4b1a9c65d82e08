/**
 * One level of the telephony load test in bridge mode (a Bambara caller, a French- or English-speaking app) as a
 * row of the recorded table: the bridge's two waits, each beside the model-only floor measured in the same run,
 * the server's frame lateness with the count of frames later than 20 ms, and the failures.
 *
 * - caller end of speech → prompt: the caller's last speech frame → the app's `prompt` (both on the worker's
 *   clock), less the call's end-of-turn silence: Kuma's recognition and the translation into the app's language;
 * - app `text` → first reply frame: the app's first token → the caller's first reply frame: the translation of
 *   the reply's first sentence into Bambara, its first phrase's synthesis, and the pacer's start.
 */
import { percentile } from '../results.js';
import type { TurnReport, WorkerReport } from './call-worker.js';
import type { LevelFigures } from './level-table.js';
import { bucketPercentile, observations, type Buckets } from './server-histograms.js';

export const BRIDGE_TABLE_HEAD = [
  '| calls | connected | phrases / prompted / replied | end of speech → prompt p50 / p99 ms | app text → first reply frame p50 / p99 ms | server reply latency p50 / p99 ms (histogram) | frame lateness p50 / p99 ms (server) | frames > 20 ms late / frames (server) | playout gaps (turns) | closed abnormally / no prompt / no reply / extra prompts / protocol errors / clears | server CPU (cores) | generator loop lag p99 ms |',
  '|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|',
];

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '—');
const pcts = (list: number[]) => (list.length ? `${fmt(percentile(list, 50))} / ${fmt(percentile(list, 99))}` : '—');

export function promptLatency(turn: TurnReport, silenceMs: number): number | null {
  return turn.speechEndToPromptMs === null ? null : turn.speechEndToPromptMs - silenceMs;
}

export function replyLatency(turn: TurnReport): number | null {
  if (turn.speechEndToReplyMs === null || turn.speechEndToPromptMs === null || turn.appMs === null) return null;
  return turn.speechEndToReplyMs - turn.speechEndToPromptMs - turn.appMs;
}

/** Frames the server sent later than `limitSeconds` between two scrapes of the lateness histogram. */
export function framesLaterThan(before: Buckets, after: Buckets, limitSeconds: number): number {
  const within = (after.get(limitSeconds) ?? 0) - (before.get(limitSeconds) ?? 0);
  return observations(before, after) - within;
}

export interface BridgeLevel {
  row: string;
  notes: string[];
  prompt: number[];
  reply: number[];
  framesLate: number;
  failures: number;
}

export function bridgeRow(figures: LevelFigures, silenceMs: number): BridgeLevel {
  const reports: WorkerReport[] = figures.reports;
  const turns = reports.flatMap((r) => r.turns);
  const sum = (key: 'connected' | 'failedToConnect' | 'closedAbnormally' | 'extraPrompts' | 'protocolErrors' | 'clears') =>
    reports.reduce((n, r) => n + r[key], 0);
  const prompted = turns.filter((t) => t.promptText !== null);
  const replied = turns.filter((t) => t.replyFrames > 0);
  const noReply = prompted.filter((t) => t.replyFrames === 0).length;
  const prompt = turns.flatMap((t) => promptLatency(t, silenceMs) ?? []);
  const reply = turns.flatMap((t) => replyLatency(t) ?? []);
  const [l0, l1] = figures.server.replyLatency;
  const [f0, f1] = figures.server.frameLateness;
  const framesLate = framesLaterThan(f0, f1, 0.02);
  const gaps = turns.reduce((n, t) => n + t.playoutGaps, 0);
  const failures =
    sum('failedToConnect') + sum('closedAbnormally') + (turns.length - prompted.length) + noReply + sum('extraPrompts') + sum('protocolErrors') + sum('clears');
  const row = [
    figures.calls,
    `${sum('connected')}${sum('failedToConnect') ? ` (${sum('failedToConnect')} failed)` : ''}`,
    `${turns.length} / ${prompted.length} / ${replied.length}`,
    pcts(prompt),
    pcts(reply),
    `${bucketPercentile(l0, l1, 50)} / ${bucketPercentile(l0, l1, 99)}`,
    `${bucketPercentile(f0, f1, 50)} / ${bucketPercentile(f0, f1, 99)}`,
    `${framesLate} / ${observations(f0, f1)}`,
    `${gaps} (${turns.filter((t) => t.playoutGaps > 0).length})`,
    `${sum('closedAbnormally') + sum('failedToConnect')} / ${turns.length - prompted.length} / ${noReply} / ${sum('extraPrompts')} / ${sum('protocolErrors')} / ${sum('clears')}`,
    figures.serverCores.toFixed(2),
    fmt(Math.max(...reports.map((r) => r.loopDelayP99Ms))),
  ];
  const notes: string[] = [];
  const problems = reports.flatMap((r) => r.problems).slice(0, 6);
  if (problems.length) notes.push(`${figures.calls} calls: ${problems.join('; ')}`);
  return { row: `| ${row.join(' | ')} |`, notes, prompt, reply, framesLate, failures };
}
