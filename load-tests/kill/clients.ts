/**
 * The clients of the SIGKILL billing test (run.ts), each recording exactly what it received — the other
 * half of the comparison with the usage rows (ledger.ts):
 * - REST: transcription (JSON), chat (JSON and SSE), speech (raw bytes); a request counts as delivered when
 *   its status was 200 and its whole body arrived (an SSE stream: to its last event);
 * - realtime: manual-commit sessions sending the same short phrase, paced under the input rate bound; an item
 *   counts when its `completed` event arrived;
 * - speech socket: sentences as text in, 16 kHz PCM out; a phrase counts once all its audio arrived — its end
 *   on the socket's audio clock (the alignment's last character) is within the bytes received.
 * Every loop runs until its server dies and never throws.
 */
import WebSocket from 'ws';
import { spokenPhrases, wavBytes } from '../../test/helpers/audio.js';
import { sseEvents, sseJson } from '../../test/helpers/sse.js';

export interface RestOutcome {
  kind: 'transcription' | 'chat' | 'chat-stream' | 'speech';
  requestId: string | null;
  delivered: boolean;
  /** What the complete answer says was billed (seconds or characters); null when not delivered. */
  quantity: number | null;
  /** performance.now() when the answer was complete. */
  at: number;
}

export interface RealtimeSessionRecord {
  requestId: string | null;
  /** usage.seconds of every completed event received, in order, and when each arrived. */
  completed: Array<{ seconds: number; at: number }>;
}

export interface SpeechSocketRecord {
  requestId: string | null;
  /** Each phrase started: its billed characters (the alignment's, a space after the phrase) and its end (ms on the socket clock). */
  phrases: Array<{ characters: number; endMs: number }>;
  /** Audio bytes received (16 kHz s16le: 32 a millisecond). */
  bytes: number;
  finished: boolean;
}

export interface Records {
  rest: RestOutcome[];
  realtime: RealtimeSessionRecord[];
  sockets: SpeechSocketRecord[];
}

const CHAT_TEXTS = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'a ka kɛnɛ'];
const SPEECH_TEXTS = ['i ni ce a b d e f g', 'n fa ni n ba bɛ malo dun'];
const UPLOAD = wavBytes(spokenPhrases(['a ka kɛnɛ', 'i ni ce'], 16000, 0.5).samples, 16000);
/** The realtime phrase: 16 kHz pcm16, as a session with `rate: 16000` takes it. */
const PHRASE = (() => {
  const { samples } = spokenPhrases(['i ni ce'], 16000, 0.3);
  const pcm = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) pcm.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return pcm;
})();
/** Each a phrase, ending with one space: a phrase's charge is then the length of its alignment (which adds a space). */
const SENTENCES = ['i ni ce. ', 'a ka kɛnɛ wa? ', 'n bɛ taa sugu la. ', 'an bɛ malo san. ', 'i ka kɛnɛ. '];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One REST request of `kind`; the outcome is pushed before the answer is read, and completed as it arrives. */
async function restOnce(baseUrl: string, apiKey: string, kind: RestOutcome['kind'], n: number, out: RestOutcome[]): Promise<boolean> {
  const outcome: RestOutcome = { kind, requestId: null, delivered: false, quantity: null, at: 0 };
  out.push(outcome);
  const auth = { authorization: `Bearer ${apiKey}` };
  const json = (body: object) => ({ method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  let init: RequestInit;
  let path: string;
  if (kind === 'transcription') {
    const form = new FormData();
    form.append('model', 'sunjata-1');
    form.append('file', new Blob([UPLOAD], { type: 'audio/wav' }), 'speech.wav');
    ((path = '/audio/transcriptions'), (init = { method: 'POST', headers: auth, body: form }));
  } else if (kind === 'speech') {
    ((path = '/audio/speech'), (init = json({ model: 'jifili-1', input: SPEECH_TEXTS[n % SPEECH_TEXTS.length], voice: 'moussa', response_format: 'pcm' })));
  } else {
    const text = CHAT_TEXTS[n % CHAT_TEXTS.length]!;
    ((path = '/chat/completions'),
      (init = json({
        model: 'banjugu-1',
        stream: kind === 'chat-stream',
        messages: [{ role: 'user', content: text }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      })));
  }
  try {
    const res = await fetch(`${baseUrl}/openai/v1${path}`, init);
    outcome.requestId = res.headers.get('x-request-id');
    const body = Buffer.from(await res.arrayBuffer()).toString('utf8');
    if (res.status !== 200) return res.status < 500;
    if (kind === 'transcription') outcome.quantity = (JSON.parse(body) as { usage: { seconds: number } }).usage.seconds;
    else if (kind === 'chat') outcome.quantity = (JSON.parse(body) as { usage: { total_tokens: number } }).usage.total_tokens;
    else if (kind === 'chat-stream') {
      // A stream cut short ends without [DONE], or inside an event (the reader throws: caught below, as a cut).
      const events = sseEvents(body);
      if (events.at(-1)?.data !== '[DONE]') return false;
      outcome.quantity = sseJson<{ usage?: { total_tokens: number } }>(body).findLast((chunk) => chunk.usage)!.usage!.total_tokens;
    } else outcome.quantity = [...SPEECH_TEXTS[n % SPEECH_TEXTS.length]!].length;
    outcome.delivered = true;
    outcome.at = performance.now();
    return true;
  } catch {
    return false; // the server died mid-request
  }
}

export async function restLoop(baseUrl: string, apiKey: string, client: number, out: RestOutcome[]): Promise<void> {
  const kinds: RestOutcome['kind'][] = ['transcription', 'chat', 'speech', 'chat-stream'];
  for (let n = client; ; n++) if (!(await restOnce(baseUrl, apiKey, kinds[n % kinds.length]!, n, out))) return;
}

function open(url: string, apiKey: string): Promise<{ ws: WebSocket; requestId: string | null } | null> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${apiKey}` } });
    let requestId: string | null = null;
    ws.once('upgrade', (res) => (requestId = (res.headers['x-request-id'] as string | undefined) ?? null));
    ws.once('open', () => resolve({ ws, requestId }));
    ws.once('error', () => resolve(null));
  });
}

/** Realtime sessions, one after another: each commits the phrase, waits for its transcript, and so on. */
export async function realtimeLoop(baseUrl: string, apiKey: string, out: RealtimeSessionRecord[]): Promise<void> {
  const url = `${baseUrl.replace('http', 'ws')}/openai/v1/realtime?intent=transcription`;
  for (;;) {
    const opened = await open(url, apiKey);
    if (!opened) return;
    const { ws } = opened;
    const record: RealtimeSessionRecord = { requestId: opened.requestId, completed: [] };
    out.push(record);
    let wake: (() => void) | null = null;
    ws.on('message', (data) => {
      const event = JSON.parse(data.toString()) as { type: string; usage?: { seconds: number } };
      if (event.type === 'conversation.item.input_audio_transcription.completed')
        record.completed.push({ seconds: event.usage!.seconds, at: performance.now() });
      // Whatever answers the last event (updated, the item's transcript or failure, an error) lets the next go.
      if (event.type === 'session.updated' || event.type.endsWith('.completed') || event.type.endsWith('.failed') || event.type === 'error') wake?.();
    });
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    const next = () => Promise.race([new Promise<void>((resolve) => (wake = resolve)), closed]);
    ws.send(
      JSON.stringify({
        type: 'session.update',
        session: {
          type: 'transcription',
          audio: { input: { format: { type: 'audio/pcm', rate: 16000 }, transcription: { model: 'sunjata-1' }, turn_detection: null } },
        },
      }),
    );
    await next();
    for (let item = 0; item < 20 && ws.readyState === WebSocket.OPEN; item++) {
      const started = performance.now();
      for (let i = 0; i < PHRASE.length; i += 3200)
        ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: PHRASE.subarray(i, i + 3200).toString('base64') }));
      ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
      await next();
      // Paced at about 2× real time, under the input rate bound (4×).
      await sleep(Math.max(0, PHRASE.length / 32 / 2 - (performance.now() - started)));
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.close();
    await closed;
  }
}

/** Speech sockets, one after another: sentences in, PCM out, until isFinal. */
export async function speechSocketLoop(baseUrl: string, apiKey: string, out: SpeechSocketRecord[]): Promise<void> {
  const url = `${baseUrl.replace('http', 'ws')}/openai/v1/audio/speech/stream?output_format=pcm_16000`;
  for (let n = 0; ; n++) {
    const opened = await open(url, apiKey);
    if (!opened) return;
    const { ws } = opened;
    const record: SpeechSocketRecord = { requestId: opened.requestId, phrases: [], bytes: 0, finished: false };
    out.push(record);
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as {
        audio?: string;
        isFinal?: boolean;
        alignment?: { chars: string[]; charStartTimesMs: number[]; charDurationsMs: number[] } | null;
      };
      if (m.alignment) {
        const last = m.alignment.chars.length - 1;
        record.phrases.push({ characters: m.alignment.chars.length, endMs: m.alignment.charStartTimesMs[last]! + m.alignment.charDurationsMs[last]! });
      }
      if (m.audio) record.bytes += Buffer.from(m.audio, 'base64').length;
      if (m.isFinal) record.finished = true;
    });
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    for (let i = 0; i < 12; i++) ws.send(JSON.stringify({ text: SENTENCES[(n + i) % SENTENCES.length] }));
    ws.send(JSON.stringify({ text: '' }));
    await closed;
    if (!record.finished) return;
  }
}
