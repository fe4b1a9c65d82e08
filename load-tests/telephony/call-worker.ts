/**
 * A share of the telephony load test's calls, in a worker thread of its own (so the orchestrating thread's
 * timers are not delayed by thousands of frames a second): an echo ConversationRelay app, a call token per call
 * minted through POST /telephony/v1/tokens with that app as relay_url, and the simulated Twilio callers,
 * started `staggerMs` apart in all, each streaming its script at real-time pace from one 5 ms timer.
 *
 * Messages from the orchestrator: 'ready?' (answered once every call is up: the measured window opens),
 * 'stop' (the window closes; callers stop talking, the turns they finished get time to be answered, then every
 * call hangs up and the worker posts its WorkerReport).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { startEchoRelayApp } from './echo-relay-app.js';
import { cadenceDeviations, pacingDeviations, playoutGaps } from './reply-timing.js';
import { TwilioCaller, type CallScript, type CallTally } from './twilio-caller.js';

export interface WorkerInput {
  /** http://127.0.0.1:PORT */
  baseUrl: string;
  apiKey: string;
  calls: number;
  /** This worker's first call number (callers start on phrase number % phrases). */
  firstCall: number;
  script: CallScript;
  /** Frame index in the script where each phrase's cycle begins. */
  phraseStarts: number[];
  staggerMs: number;
  /** Longest wait, after 'stop', for the window's last turns to be answered. */
  drainMs: number;
  /** Bridge mode: the app's language (the call token's `language`) and its reply to every prompt. */
  bridge?: { language: string; reply: string };
}

/** One caller phrase finished inside the measured window. */
export interface TurnReport {
  phrase: number;
  promptText: string | null;
  /** Last speech frame sent → first reply frame received (ms), null without a reply. */
  speechEndToReplyMs: number | null;
  /** Last speech frame sent → the app's prompt (ms), null without one. */
  speechEndToPromptMs: number | null;
  appMs: number | null;
  replyFrames: number;
  /** Each reply frame's cadence deviation over the whole reply (reply-timing.ts), ms. */
  deviations: number[];
  /** The same within each run of frames between playout gaps: the pacer's own jitter, ms. */
  pacing: number[];
  playoutGaps: number;
  playoutGapMs: number;
}

export interface WorkerReport extends CallTally {
  connected: number;
  failedToConnect: number;
  relayConnections: number;
  turns: TurnReport[];
  /** Prompts the app got that no phrase explains (a phrase split into two turns). */
  extraPrompts: number;
  appNotices: number;
  /** Bridge mode: the first few prompts' `original` (the caller's words as Kuma heard them). */
  originals: string[];
  /** This worker's event-loop delay p99 (ms) over the window: the client-side times include it. */
  loopDelayP99Ms: number;
}

const input = workerData as WorkerInput;
// The callers stand in for carriers on other machines: at niceness 10 (KUMA_BENCH_GENERATOR_NICE) they do not
// take the server's cores at its pacer's ticks. Their own receive times then carry more of their lag.
os.setPriority(0, Number(process.env.KUMA_BENCH_GENERATOR_NICE ?? 10));
const tally: CallTally = {
  framesSent: 0,
  framesLate: 0,
  framesReceived: 0,
  marksEchoed: 0,
  clears: 0,
  unexpectedMedia: 0,
  protocolErrors: 0,
  problems: [],
  closedAbnormally: 0,
};
let extraPrompts = 0;
let appNotices = 0;
const originals: string[] = [];
const bySid = new Map<string, TwilioCaller>();
const app = await startEchoRelayApp(
  {
    prompt(callSid, text, at, original) {
      if (original !== undefined && originals.length < 8) originals.push(original);
      const caller = bySid.get(callSid);
      if (!caller || !caller.turns.some((t) => t.promptAt === undefined)) extraPrompts++;
      caller?.prompted(text, at);
    },
    answered: (callSid, at) => bySid.get(callSid)?.answered(at),
    notice(callSid, what) {
      appNotices++;
      if (tally.problems.length < 20) tally.problems.push(`app (${callSid?.slice(0, 10) ?? 'no call'}): ${what}`);
    },
  },
  input.bridge?.reply,
);

async function mintToken(): Promise<string> {
  const res = await fetch(`${input.baseUrl}/telephony/v1/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${input.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ relay_url: app.url, mode: 'relay', ...(input.bridge ? { language: input.bridge.language } : {}) }),
  });
  const body = (await res.json()) as { token?: string };
  if (res.status !== 200 || !body.token) throw new Error(`token ${res.status}: ${JSON.stringify(body)}`);
  return body.token;
}

const tokens = await Promise.all(Array.from({ length: input.calls }, () => mintToken()));
const mask = crypto.randomBytes(4);
const wsUrl = `${input.baseUrl.replace(/^http/, 'ws')}/telephony/v1/twilio`;
const callers: TwilioCaller[] = [];
const callsStarted = new Promise<void>((resolve) => {
  tokens.forEach((token, i) => {
    setTimeout(
      () => {
        const number = input.firstCall + i;
        const caller = new TwilioCaller(wsUrl, token, input.script, input.phraseStarts[number % input.phraseStarts.length]!, mask, tally);
        bySid.set(caller.callSid, caller);
        callers.push(caller);
        if (callers.length === input.calls) resolve();
      },
      (i / input.calls) * input.staggerMs,
    );
  });
});
// One timer for every caller: each sends the frames due by now.
const timer = setInterval(() => {
  const now = performance.now();
  for (const caller of callers) caller.pump(now);
}, 5);

const loopDelay = monitorEventLoopDelay({ resolution: 5 });
let windowStart = Number.NaN;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A turn is settled once answered and its reply has stopped coming, or when it waited too long. */
function settled(turn: TwilioCaller['turns'][number], now: number): boolean {
  if (turn.arrivals.length === 0) return false;
  return now - turn.arrivals.at(-1)! > 1000;
}

function report(windowEnd: number): WorkerReport {
  const turns: TurnReport[] = [];
  for (const caller of callers) {
    for (const turn of caller.turns) {
      if (turn.speechEndAt < windowStart || turn.speechEndAt > windowEnd) continue;
      const gaps = playoutGaps(turn.arrivals);
      turns.push({
        phrase: turn.phrase,
        promptText: turn.promptText ?? null,
        speechEndToReplyMs: turn.arrivals.length ? turn.arrivals[0]! - turn.speechEndAt : null,
        speechEndToPromptMs: turn.promptAt === undefined ? null : turn.promptAt - turn.speechEndAt,
        appMs: turn.appMs ?? null,
        replyFrames: turn.arrivals.length,
        deviations: cadenceDeviations(turn.arrivals),
        pacing: pacingDeviations(turn.arrivals),
        playoutGaps: gaps.count,
        playoutGapMs: gaps.totalMs,
      });
    }
  }
  const connected = callers.filter((c) => c.opened).length;
  return {
    ...tally,
    connected,
    failedToConnect: input.calls - connected,
    relayConnections: app.connections(),
    turns,
    extraPrompts,
    appNotices,
    originals,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
  };
}

parentPort!.on('message', async (message: string) => {
  if (message === 'ready?') {
    await callsStarted;
    // Give the last calls a moment to open (or fail) before the window opens.
    for (let waited = 0; callers.some((c) => !c.opened && !c.failed) && waited < 10_000; waited += 50) await sleep(50);
    windowStart = performance.now();
    loopDelay.enable();
    parentPort!.postMessage({ framesSent: tally.framesSent });
    return;
  }
  // 'stop'
  const windowEnd = performance.now();
  loopDelay.disable();
  for (const caller of callers) caller.speaking = false;
  const waiting = () =>
    callers.flatMap((c) => c.turns.filter((t) => t.speechEndAt >= windowStart && t.speechEndAt <= windowEnd && !settled(t, performance.now())));
  for (const started = performance.now(); waiting().length > 0 && performance.now() - started < input.drainMs;) await sleep(100);
  clearInterval(timer);
  for (const caller of callers) caller.hangup();
  for (let waited = 0; callers.some((c) => c.opened && !c.closed) && waited < 3000; waited += 50) await sleep(50);
  const result = report(windowEnd);
  await app.close();
  parentPort!.postMessage(result);
});
