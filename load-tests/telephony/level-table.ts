/**
 * One level of the telephony load test as a row of the recorded table: the workers' reports merged, the
 * client-side percentiles, the server's histograms, failures, CPU, the targets (met / MISSED), and the ratios
 * to the run's first level (its baseline).
 */
import { percentile } from '../results.js';
import type { TurnReport, WorkerReport } from './call-worker.js';
import type { PhraseInfo } from './caller-script.js';
import { bucketPercentile, bucketUpperMs, type Buckets } from './server-histograms.js';

export interface LevelFigures {
  calls: number;
  reports: WorkerReport[];
  /** Length of the measured window. */
  seconds: number;
  serverCores: number;
  /** This process over the window: the call workers, the orchestrating thread, GC. */
  generatorCores: number;
  server: { replyLatency: [Buckets, Buckets]; frameLateness: [Buckets, Buckets] };
}

export const TARGET_CALLS = 200;
export const TARGET_LATENCY_P99_MS = 400;
export const TARGET_JITTER_P99_MS = 20;
/** A reply whose length is outside these multiples of the phrase's own speech does not say the same words. */
const REPLY_LENGTH_RANGE = [0.7, 1.5] as const;

export const TABLE_HEAD = [
  '| calls | connected | phrases / prompted / replied | exact prompts | reply latency p50 / p99 ms (client) | same, server histogram p50 / p99 ms | latency p99 ≤ 400 | frame cadence deviation, whole reply, p50 / p99 ms (client) | pacing jitter, between gaps, p50 / p99 ms (client) | frame lateness p50 / p99 ms (server histogram) | frame lateness p99 ≤ 20 (server) | playout gaps (turns) | reply length off | closed abnormally / no prompt / no reply / extra prompts / protocol errors / clears | server CPU (cores) | generator CPU (cores; µs per frame in+out) | generator loop lag p99 ms | vs first level: latency p99 × / jitter p99 × / server CPU per call × |',
  '|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|',
];

interface Summary {
  latencies: number[];
  deviations: number[];
  pacing: number[];
  serverCoresPerCall: number;
}

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(Math.abs(v) < 10 ? 1 : 0) : '—');
const pcts = (list: number[]) => (list.length ? `${fmt(percentile(list, 50))} / ${fmt(percentile(list, 99))}` : '—');
const p99 = (list: number[]) => (list.length ? percentile(list, 99) : Number.NaN);
const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}` : '—');

function merge(reports: WorkerReport[]): WorkerReport {
  return reports.reduce((a, b) => {
    const merged = { ...a } as WorkerReport;
    for (const key of Object.keys(b) as Array<keyof WorkerReport>) {
      const x = a[key];
      const y = b[key];
      if (typeof x === 'number' && typeof y === 'number')
        (merged as unknown as Record<string, number>)[key] = key === 'loopDelayP99Ms' ? Math.max(x, y) : x + y;
    }
    merged.turns = [...a.turns, ...b.turns];
    merged.problems = [...a.problems, ...b.problems].slice(0, 20);
    return merged;
  });
}

/** Client reply latency of a turn: end of speech → first reply frame, less the app's time and the end-of-turn silence. */
function replyLatency(turn: TurnReport, silenceMs: number): number | null {
  if (turn.speechEndToReplyMs === null || turn.appMs === null) return null;
  return turn.speechEndToReplyMs - turn.appMs - silenceMs;
}

function summarize(figures: LevelFigures, silenceMs: number): Summary {
  const report = merge(figures.reports);
  const latencies = report.turns.flatMap((t) => replyLatency(t, silenceMs) ?? []);
  return {
    latencies,
    deviations: report.turns.flatMap((t) => t.deviations),
    pacing: report.turns.flatMap((t) => t.pacing),
    serverCoresPerCall: figures.serverCores / figures.calls,
  };
}

export function levelRow(figures: LevelFigures, baseline: LevelFigures, phrases: PhraseInfo[], silenceMs: number): { row: string; notes: string[] } {
  const report = merge(figures.reports);
  const { turns } = report;
  const summary = summarize(figures, silenceMs);
  const base = summarize(baseline, silenceMs);
  const prompted = turns.filter((t) => t.promptText !== null);
  const replied = turns.filter((t) => t.replyFrames > 0);
  const exact = prompted.filter((t) => t.promptText === phrases[t.phrase]!.text);
  const lengthOff = replied.filter((t) => {
    if (t.promptText !== phrases[t.phrase]!.text) return false;
    const r = (t.replyFrames * 20) / phrases[t.phrase]!.speechMs;
    return r < REPLY_LENGTH_RANGE[0] || r > REPLY_LENGTH_RANGE[1];
  });
  const noReply = prompted.filter((t) => t.replyFrames === 0).length;
  const gapTurns = turns.filter((t) => t.playoutGaps > 0).length;
  const gaps = turns.reduce((sum, t) => sum + t.playoutGaps, 0);
  const [l0, l1] = figures.server.replyLatency;
  const [f0, f1] = figures.server.frameLateness;
  const latencyP99 = p99(summary.latencies);
  const jitterP99 = p99(summary.pacing);
  const atTarget = figures.calls >= TARGET_CALLS;
  const mark = (ok: boolean) => (atTarget ? (ok ? 'met' : '**MISSED**') : ok ? 'ok' : 'over');
  const failures =
    report.failedToConnect + report.closedAbnormally + (turns.length - prompted.length) + noReply + report.extraPrompts + report.protocolErrors + report.clears;
  const framesInOut = report.framesSent + report.framesReceived;
  const generatorUs = framesInOut > 0 ? (figures.generatorCores * figures.seconds * 1e6) / framesInOut : Number.NaN;
  const row = [
    figures.calls,
    `${report.connected}${report.failedToConnect ? ` (${report.failedToConnect} failed)` : ''}`,
    `${turns.length} / ${prompted.length} / ${replied.length}`,
    prompted.length ? `${((100 * exact.length) / prompted.length).toFixed(1)} %` : '—',
    pcts(summary.latencies),
    `${bucketPercentile(l0, l1, 50)} / ${bucketPercentile(l0, l1, 99)}`,
    mark(latencyP99 <= TARGET_LATENCY_P99_MS && failures === 0),
    pcts(summary.deviations),
    pcts(summary.pacing),
    `${bucketPercentile(f0, f1, 50)} / ${bucketPercentile(f0, f1, 99)}`,
    // Kuma's pacing is what the target is about: the server's own send-time lateness. The client's figures
    // beside it also hold the generator's lag, which shares these 2 cores.
    mark(bucketUpperMs(f0, f1, 99) <= TARGET_JITTER_P99_MS),
    `${gaps} (${gapTurns})`,
    lengthOff.length,
    `${report.closedAbnormally + report.failedToConnect} / ${turns.length - prompted.length} / ${noReply} / ${report.extraPrompts} / ${report.protocolErrors} / ${report.clears}`,
    figures.serverCores.toFixed(2),
    `${figures.generatorCores.toFixed(2)} (${fmt(generatorUs)})`,
    fmt(report.loopDelayP99Ms),
    `${ratio(latencyP99, p99(base.latencies))} / ${ratio(jitterP99, p99(base.pacing))} / ${ratio(summary.serverCoresPerCall, base.serverCoresPerCall)}`,
  ];
  const notes: string[] = [];
  const inexact = prompted.filter((t) => t.promptText !== phrases[t.phrase]!.text).slice(0, 4);
  if (inexact.length)
    notes.push(
      `${figures.calls} calls: inexact prompts (first 4): ${inexact.map((t) => `${JSON.stringify(t.promptText)} for "${phrases[t.phrase]!.text}"`).join('; ')}`,
    );
  if (lengthOff.length)
    notes.push(
      `${figures.calls} calls: reply lengths off (first 4, reply ÷ phrase): ${lengthOff
        .slice(0, 4)
        .map((t) => ((t.replyFrames * 20) / phrases[t.phrase]!.speechMs).toFixed(2))
        .join(', ')}`,
    );
  if (report.problems.length) notes.push(`${figures.calls} calls: ${report.problems.slice(0, 6).join('; ')}`);
  if (report.unexpectedMedia) notes.push(`${figures.calls} calls: ${report.unexpectedMedia} reply frames before any prompt`);
  if (report.framesLate) notes.push(`${figures.calls} calls: the generator sent ${report.framesLate} frames over 40 ms late (its own lag)`);
  return { row: `| ${row.join(' | ')} |`, notes };
}
