/**
 * The request mix of the cluster kill test (cluster-kill.ts): speech, transcription and chat translation on
 * the primary surface, as an OpenAI-style client sends them, and what came back — who answered (a Kuma
 * node names itself in `x-kuma-backend`, set by HAProxy on node responses; HAProxy's own answers carry no
 * `x-request-id` and name the server they were meant for in `x-kuma-lb-server`, deploy/haproxy/kuma.cfg),
 * the status, and whether the whole body arrived.
 */
import { spokenPhrases, wavBytes } from '../../test/helpers/audio.js';
import { sseEvents } from '../../test/helpers/sse.js';

export type Kind = 'speech' | 'speech-sse' | 'transcription' | 'chat' | 'chat-stream';

export interface Outcome {
  kind: Kind;
  account: string;
  /** ms since the run's origin (performance.now()) when the request was sent, and when it ended. */
  startedAt: number;
  endedAt: number;
  /** 0 when no status line came back (connection failed). */
  status: number;
  /** The node that answered (x-kuma-backend), or undefined for HAProxy's own answers and failures. */
  node?: string;
  requestId?: string;
  /** For HAProxy's own answers: the server it had picked (x-kuma-lb-server), `<NOSRV>` when none. */
  lbServer?: string;
  /** Set when the request failed at the transport level: no response, or a body that did not arrive whole. */
  transportError?: string;
  /** True when the status line came but the body was cut (the node died mid-response). */
  truncated: boolean;
  /** The first characters of a 5xx answer's body, to say who refused and why. */
  errorBody?: string;
}

const SPEECH_TEXTS = ['i ni ce', 'i ni ce a b d e f g', 'n fa ni n ba bɛ malo dun', 'a ka kɛnɛ wa, i ka kɛnɛ'];
const CHAT_TEXTS = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'a ka kɛnɛ', 'i ni wula'];
const SPEECH_FORMATS = ['mp3', 'wav', 'pcm', 'opus'];

/** A few short WAV uploads (1–3 s of the demo voice, 16 kHz), made once. */
const UPLOADS = [['i ni ce'], ['a ka kɛnɛ', 'i ni ce'], ['n fa ni n ba']].map((phrases) => {
  const audio = spokenPhrases(phrases, 16000, 0.5);
  return new Uint8Array(wavBytes(audio.samples, 16000));
});

/** Kinds by weight: speech (raw bytes or SSE), transcription uploads, chat translation (JSON or SSE). */
const MIX: Array<[Kind, number]> = [
  ['speech', 30],
  ['speech-sse', 10],
  ['transcription', 30],
  ['chat', 25],
  ['chat-stream', 5],
];
const MIX_TOTAL = MIX.reduce((n, [, w]) => n + w, 0);

export function pickKind(random: () => number): Kind {
  let r = random() * MIX_TOTAL;
  for (const [kind, weight] of MIX) if ((r -= weight) < 0) return kind;
  return MIX[0]![0];
}

const pick = <T>(list: readonly T[], random: () => number): T => list[Math.floor(random() * list.length)]!;

const jsonPost = (path: string, body: object) => ({ path, init: { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } });

function requestFor(kind: Kind, random: () => number): { path: string; init: RequestInit } {
  switch (kind) {
    case 'speech':
    case 'speech-sse':
      return jsonPost('/audio/speech', {
        model: 'jifili-1',
        input: pick(SPEECH_TEXTS, random),
        voice: 'moussa',
        response_format: pick(SPEECH_FORMATS, random),
        ...(kind === 'speech-sse' ? { stream_format: 'sse' } : {}),
      });
    case 'transcription': {
      const form = new FormData();
      form.append('model', 'sunjata-1');
      form.append('file', new Blob([pick(UPLOADS, random)], { type: 'audio/wav' }), 'speech.wav');
      return { path: '/audio/transcriptions', init: { body: form } };
    }
    case 'chat':
    case 'chat-stream':
      return jsonPost('/chat/completions', {
        model: 'banjugu-1',
        messages: [{ role: 'user', content: pick(CHAT_TEXTS, random) }],
        djelia: { source_language: 'bam_Latn', target_language: random() < 0.5 ? 'fra_Latn' : 'eng_Latn' },
        ...(kind === 'chat-stream' ? { stream: true } : {}),
      });
  }
}

/** Sends one request of `kind` through the balancer and reads the whole answer. Never throws. */
export async function sendOne(
  baseUrl: string,
  apiKey: string,
  account: string,
  kind: Kind,
  origin: number,
  random: () => number,
  timeoutMs: number,
): Promise<Outcome> {
  const { path, init } = requestFor(kind, random);
  const startedAt = performance.now() - origin;
  const outcome: Outcome = { kind, account, startedAt, endedAt: startedAt, status: 0, truncated: false };
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/openai/v1${path}`, {
      ...init,
      method: 'POST',
      headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    outcome.transportError = describe(err);
    outcome.endedAt = performance.now() - origin;
    return outcome;
  }
  outcome.status = res.status;
  outcome.node = res.headers.get('x-kuma-backend') ?? undefined;
  outcome.requestId = res.headers.get('x-request-id') ?? undefined;
  outcome.lbServer = res.headers.get('x-kuma-lb-server') ?? undefined;
  try {
    const body = await res.arrayBuffer();
    if (res.status >= 500) outcome.errorBody = Buffer.from(body).toString('utf8').slice(0, 300);
    // An SSE answer that ended without its last event was cut, even if the connection closed cleanly.
    if (res.status === 200 && (kind === 'speech-sse' || kind === 'chat-stream')) {
      const text = Buffer.from(body).toString('utf8');
      let last: string | undefined;
      try {
        last = sseEvents(text).at(-1)?.data;
      } catch {
        last = undefined; // cut inside an event
      }
      const done = kind === 'chat-stream' ? last === '[DONE]' : last !== undefined && (JSON.parse(last) as { type?: string }).type === 'speech.audio.done';
      if (!done) ((outcome.truncated = true), (outcome.transportError = 'stream ended without its final event'));
    }
  } catch (err) {
    outcome.truncated = true;
    outcome.transportError = describe(err);
  }
  outcome.endedAt = performance.now() - origin;
  return outcome;
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  return [e.name, e.message, e.cause?.code ?? e.cause?.message].filter(Boolean).join(': ');
}
