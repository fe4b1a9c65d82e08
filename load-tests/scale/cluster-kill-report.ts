/**
 * The cluster kill test's verdict and tables (cluster-kill.ts): every response classified by who made it (a
 * node: x-kuma-backend; HAProxy: no x-request-id) and when it was sent relative to the kill, the balancer's
 * notice and the restarted node's return; HAProxy's log read for retried connections; and the ledger's
 * invariants from PostgreSQL before and after the run.
 */
import type { LedgerSnapshot } from './ledger-check.js';
import type { Kind, Outcome } from './mixed-requests.js';
import { percentile } from '../results.js';

/** ms from the load's start. HAProxy's state is sampled: a change seen at `…At` happened after `…After`. */
export interface KillTimeline {
  killedAt?: number;
  noticedAfter?: number;
  noticedAt?: number;
  restartedAt?: number;
  upAgainAfter?: number;
  upAgainAt?: number;
  loadEndedAt?: number;
}

export interface ReportInput {
  outcomes: Outcome[];
  timeline: KillTimeline;
  victim: string;
  accounts: Array<{ id: string; name: string; poor: boolean }>;
  before: LedgerSnapshot;
  after: LedgerSnapshot;
  haproxyLog: string;
  durationMs: number;
  stateChanges: Array<{ since: number; at: number; server: string; state: string }>;
}

const KINDS: Kind[] = ['speech', 'speech-sse', 'transcription', 'chat', 'chat-stream'];
const s = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? '—' : (ms / 1000).toFixed(2));

export function analyse(input: ReportInput) {
  const { outcomes, timeline: t, victim } = input;
  const failures: string[] = [];
  const notes: string[] = [];
  const killedAt = t.killedAt ?? Infinity;
  const noticedAt = t.noticedAt ?? NaN;
  const fromNode = (o: Outcome) => o.node !== undefined;
  const fromBalancer = (o: Outcome) => o.status > 0 && o.requestId === undefined;
  const show = (o: Outcome) =>
    `${o.kind} sent at ${s(o.startedAt)} s, ended ${s(o.endedAt)} s: ${o.status || 'no answer'} ${o.node ?? `lb→${o.lbServer ?? '?'}`}${o.transportError ? ` (${o.transportError})` : ''}${o.errorBody ? ` ${o.errorBody}` : ''}`;

  // 1. A node never answers 5xx (overload would be 503 from a full queue: the demo's queues wait instead).
  const nodeErrors = outcomes.filter((o) => fromNode(o) && o.status >= 500);
  if (nodeErrors.length) failures.push(`${nodeErrors.length} 5xx answered by a live node, e.g. ${nodeErrors.slice(0, 3).map(show).join('; ')}`);

  // 2. HAProxy answers itself only for requests the killed node held or was sent before it was noticed.
  const balancerAnswers = outcomes.filter(fromBalancer);
  const excused = (o: Outcome) => o.lbServer === victim && o.startedAt < noticedAt;
  const unexcused = balancerAnswers.filter((o) => !excused(o));
  if (unexcused.length)
    failures.push(`${unexcused.length} answers made by HAProxy outside the kill window, e.g. ${unexcused.slice(0, 3).map(show).join('; ')}`);

  // 3. Transport failures: none, except on the killed node's requests. A request in flight on it that is not
  // the first of its client connection gets no 502: HAProxy closes the client connection without an answer
  // (and writes no log line) — its "abort_keep_alive", the HTTP/1.1 signal that a keep-alive request failed
  // on the network. Such closes cannot name the node, so they are attributed by time: sent before the kill
  // was noticed, failed with a closed socket between the kill and 2 s after the notice.
  const noAnswer = outcomes.filter((o) => o.status === 0);
  const closedByKill = (o: Outcome) =>
    o.startedAt < noticedAt &&
    o.endedAt >= killedAt &&
    o.endedAt <= noticedAt + 2000 &&
    /UND_ERR_SOCKET|other side closed|ECONNRESET/.test(o.transportError ?? '');
  const badNoAnswer = noAnswer.filter((o) => !closedByKill(o));
  if (badNoAnswer.length)
    failures.push(`${badNoAnswer.length} requests got no answer at all outside the kill window, e.g. ${badNoAnswer.slice(0, 3).map(show).join('; ')}`);
  const cut = outcomes.filter((o) => o.status > 0 && o.truncated);
  const badCuts = cut.filter((o) => !(o.node === victim && o.startedAt < killedAt));
  if (badCuts.length)
    failures.push(`${badCuts.length} answers cut short outside the killed node's in-flight requests, e.g. ${badCuts.slice(0, 3).map(show).join('; ')}`);

  // 4. The balancer noticed, and took the restarted node back.
  if (Number.isNaN(noticedAt)) failures.push(`HAProxy never marked ${victim} DOWN after the kill`);
  if (Number.isNaN(t.upAgainAt ?? NaN)) failures.push(`HAProxy never marked ${victim} UP again after its restart`);

  // 5. HAProxy sent nothing to the killed node while it was down: no answer from it to a request sent after
  // the notice and before it was marked UP again (its restart answers /readyz 503 until its models are warm).
  // A request reaches HAProxy some time after this process timed its sending (200 clients share its event
  // loop), hence 1 s of slack before the earliest moment the node can have been marked UP.
  const whileDown = outcomes.filter((o) => o.node === victim && o.startedAt >= noticedAt && o.startedAt < (t.upAgainAfter ?? Infinity) - 1000);
  if (whileDown.length)
    failures.push(`${whileDown.length} requests sent while ${victim} was down were answered by it, e.g. ${whileDown.slice(0, 3).map(show).join('; ')}`);

  // 6. Every kind of request was served.
  for (const kind of KINDS) if (!outcomes.some((o) => o.kind === kind && o.status === 200 && !o.truncated)) failures.push(`no ${kind} request succeeded`);

  // 7. The ledger, from PostgreSQL: usage rows = balance change, exactly, per account and in total.
  let charged = 0;
  let delta = 0;
  for (const a of input.accounts) {
    const used = input.after.usage.get(a.id)?.costMicros ?? 0;
    const change = input.before.balances.get(a.id)! - input.after.balances.get(a.id)!;
    charged += used;
    delta += change;
    if (used !== change) failures.push(`${a.name}: usage rows sum to ${used} micros, balance changed by ${change}`);
    if (input.after.balances.get(a.id)! < 0) failures.push(`${a.name}: balance ${input.after.balances.get(a.id)} < 0`);
  }
  if (charged !== delta) failures.push(`usage rows sum to ${charged} micros, balances changed by ${delta}`);
  if (input.after.lowestBalanceAnywhere < 0) failures.push(`an account in the database has a negative balance (${input.after.lowestBalanceAnywhere})`);

  // 8. What the clients saw against what was charged: every complete 200 charged; charges without a 200 shown.
  const complete = outcomes.filter((o) => o.status === 200 && !o.truncated && o.requestId);
  const uncharged = complete.filter((o) => !input.after.chargedRequests.has(o.requestId!));
  if (uncharged.length)
    failures.push(
      `${uncharged.length} complete 200 answers have no usage row, e.g. ${uncharged
        .slice(0, 3)
        .map((o) => o.requestId)
        .join(', ')}`,
    );
  const seen = new Set(complete.map((o) => o.requestId!));
  const chargedUnseen = [...input.after.chargedRequests].filter((id) => !seen.has(id));

  // The kill window.
  const onVictim = (o: Outcome) => o.node === victim || o.lbServer === victim || (o.status === 0 && closedByKill(o));
  const inFlight = outcomes.filter((o) => o.startedAt < killedAt && o.endedAt > killedAt && onVictim(o));
  const sentBeforeNotice = outcomes.filter((o) => o.startedAt >= killedAt && o.startedAt < noticedAt);
  const retried = haproxyRetries(input.haproxyLog);
  const leftHolds = input.after.holds;
  const now = Date.now();
  const poorAfter = input.accounts.filter((a) => a.poor).map((a) => `${a.name} ${input.before.balances.get(a.id)} → ${input.after.balances.get(a.id)}`);

  const count = (list: Outcome[], f: (o: Outcome) => boolean) => list.filter(f).length;
  const table: string[] = [
    '| event | at (s from load start) |',
    '|---|---:|',
    `| SIGKILL to ${victim} | ${s(t.killedAt)} |`,
    `| HAProxy marks it DOWN (stats sampled every 100 ms: between) | ${s(t.noticedAfter)}–${s(noticedAt)} (+${s((t.noticedAfter ?? NaN) - killedAt)}–${s(noticedAt - killedAt)}) |`,
    `| node started again (start-node.sh) | ${s(t.restartedAt)} |`,
    `| HAProxy marks it UP again (after /readyz 200 twice; between) | ${s(t.upAgainAfter)}–${s(t.upAgainAt)} (+${s((t.upAgainAt ?? NaN) - (t.restartedAt ?? NaN))} after the restart) |`,
    `| clients stop sending / last answer | ${s(input.durationMs)} / ${s(t.loadEndedAt)} |`,
    '',
    '| request | sent | 200 | 402 | other 4xx | node 5xx | HAProxy 5xx | cut / no answer | p50 ms | p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...[...KINDS, 'all' as const].map((kind) => {
      const list = kind === 'all' ? outcomes : outcomes.filter((o) => o.kind === kind);
      const ok = list.filter((o) => o.status === 200 && !o.truncated).map((o) => o.endedAt - o.startedAt);
      return `| ${kind} | ${list.length} | ${ok.length} | ${count(list, (o) => o.status === 402)} | ${count(list, (o) => fromNode(o) && o.status >= 400 && o.status < 500 && o.status !== 402)} | ${count(list, (o) => fromNode(o) && o.status >= 500)} | ${count(list, (o) => fromBalancer(o) && o.status >= 500)} | ${count(list, (o) => o.truncated || o.status === 0)} | ${ok.length ? percentile(ok, 50).toFixed(0) : '—'} | ${ok.length ? percentile(ok, 99).toFixed(0) : '—'} |`;
    }),
    '',
    '| node | answers before the kill | kill → UP again | after UP again |',
    '|---|---:|---:|---:|',
    ...['kuma1', 'kuma2', 'kuma3'].map((node) => {
      const mine = outcomes.filter((o) => o.node === node);
      const upAgain = t.upAgainAfter ?? Infinity;
      return `| ${node}${node === victim ? ' (killed)' : ''} | ${count(mine, (o) => o.startedAt < killedAt)} | ${count(mine, (o) => o.startedAt >= killedAt && o.startedAt < upAgain)} | ${count(mine, (o) => o.startedAt >= upAgain)} |`;
    }),
  ];

  const answered = outcomes.filter((o) => o.status > 0);
  notes.push(
    `Throughput: ${answered.length} answers in ${s(t.loadEndedAt)} s = ${(answered.length / ((t.loadEndedAt ?? input.durationMs) / 1000)).toFixed(1)} answers/s (${(complete.length / ((t.loadEndedAt ?? input.durationMs) / 1000)).toFixed(1)} complete 200/s); statuses: ${statusCounts(outcomes)}`,
    `Kill window: ${inFlight.length} requests were in flight on ${victim} at the kill → ${count(inFlight, (o) => fromBalancer(o) && o.status === 502)} HAProxy 502 (the first request of their client connection), ${count(inFlight, (o) => o.status === 0)} client connections closed without an answer (later requests of a keep-alive connection: HAProxy's abort_keep_alive, which it does not log), ${count(inFlight, (o) => o.truncated)} cut mid-body (200 with headers already sent), ${count(inFlight, (o) => !o.truncated && o.node === victim)} completed before it died. ${sentBeforeNotice.length} requests were sent between the kill and HAProxy's notice: ${count(sentBeforeNotice, (o) => fromBalancer(o) && o.status === 502)} HAProxy 502 and ${count(sentBeforeNotice, (o) => o.status === 0)} closed without an answer (they reached the dying node, so they were not retried), the rest served by the other nodes; HAProxy retried ${retried.retried} connections (${retried.redispatched} on another node, per its log). HAProxy's own answers by status: ${statusCounts(balancerAnswers) || 'none'}`,
    `Ledger (PostgreSQL, ${input.accounts.length} test accounts): usage rows ${sum(input.accounts.map((a) => input.after.usage.get(a.id)?.rows ?? 0))}, sum ${charged} micros; sum of balance deltas ${delta} micros → ${charged === delta ? 'equal' : 'NOT EQUAL'}; lowest balance in the database ${input.after.lowestBalanceAnywhere} micros; poor accounts (micros): ${poorAfter.join(', ')}`,
    `Holds left after the run: ${leftHolds.length} (${sum(leftHolds.map((h) => h.amountMicros))} micros${leftHolds.length ? `, expiring in ${((Math.min(...leftHolds.map((h) => h.expiresAt)) - now) / 1000).toFixed(0)}–${((Math.max(...leftHolds.map((h) => h.expiresAt)) - now) / 1000).toFixed(0)} s` : ''}): the killed node's reservations, which nothing settles or renews; they are not debits (the balances above exclude them) and stop counting at expiry`,
    `Charged requests whose client saw no complete 200: ${chargedUnseen.length}${
      chargedUnseen.length
        ? ` (${chargedUnseen
            .slice(0, 5)
            .map((id) => {
              const o = outcomes.find((x) => x.requestId === id);
              return `${id}: ${o ? `client saw ${o.status}${o.truncated ? ' cut' : ''} from ${o.node}` : 'client saw no answer with this id (closed or 502)'}`;
            })
            .join('; ')}): settled by the killed node just before it died, its answer lost on the way — why HAProxy must not re-send such a request`
        : ''
    }`,
  );
  return { pass: failures.length === 0, failures, notes, table };
}

function statusCounts(list: Outcome[]): string {
  const counts = new Map<string, number>();
  for (const o of list) {
    const key = o.status === 0 ? 'no answer' : `${o.status}${o.truncated ? ' cut' : ''}${o.requestId === undefined ? ' (HAProxy)' : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Requests whose connection HAProxy retried (retries field of its httplog line; `+` = redispatched). */
function haproxyRetries(log: string): { retried: number; redispatched: number } {
  let retried = 0;
  let redispatched = 0;
  for (const m of log.matchAll(/ kuma kuma_nodes\/\S+ \S+ \d+ \d+ \S+ \S+ \S{4} \d+\/\d+\/\d+\/\d+\/(\+?)(\d+) /g)) {
    if (Number(m[2]) > 0) retried++;
    if (m[1] === '+') redispatched++;
  }
  return { retried, redispatched };
}
