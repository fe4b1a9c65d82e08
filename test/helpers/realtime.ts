/**
 * Realtime session test helpers: a server with the demo speech, TTS, translation and VAD models; demo
 * speech in any session input format (synthesized by the server's own /audio/speech); and a `ws` client
 * that records every server event and waits for the ones a test names.
 */
import https from 'node:https';
import path from 'node:path';
import WebSocket from 'ws';
import { startTestServerWithModels } from './models-test-server.js';
import type { TestServer } from './test-server.js';
import { wsUrl } from './websocket-client.js';

export const REALTIME_MODELS = [
  { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), maxQueue: 32 },
  { id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), maxQueue: 32 },
  { id: 'banjugu-1', engine: 'nllb', dir: path.resolve('models/demo/nllb'), maxQueue: 32 },
  { id: 'vad', engine: 'silero-vad', dir: path.resolve('models') },
];

export function startRealtimeServer(options: Parameters<typeof startTestServerWithModels>[1] = {}): Promise<TestServer> {
  return startTestServerWithModels(REALTIME_MODELS, options);
}

export type WireFormat = 'pcm16' | 'g711_ulaw' | 'g711_alaw';
const SPEECH_FORMAT: Record<WireFormat, string> = { pcm16: 'pcm', g711_ulaw: 'ulaw', g711_alaw: 'alaw' };
/** Bytes per 20 ms frame, and the byte of silence (G.711's zero level). */
export const FRAME_BYTES: Record<WireFormat, number> = { pcm16: 960, g711_ulaw: 160, g711_alaw: 160 };
const SILENCE_BYTE: Record<WireFormat, number> = { pcm16: 0, g711_ulaw: 0xff, g711_alaw: 0xd5 };

/** Demo speech of `text` in the session format, from the server's own TTS (over https when the server has TLS: pass its CA). */
export async function speak(t: TestServer, text: string, format: WireFormat = 'pcm16', ca?: Buffer): Promise<Buffer> {
  const body = JSON.stringify({ model: 'jifili-1', input: text, voice: 'alloy', response_format: SPEECH_FORMAT[format] });
  const headers = { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' };
  if (ca) return httpsPost(`https://127.0.0.1:${t.server.port}/openai/v1/audio/speech`, headers, body, ca);
  const res = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, { method: 'POST', headers, body });
  if (res.status !== 200) throw new Error(`speech ${res.status}: ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

function httpsPost(url: string, headers: Record<string, string>, body: string, ca: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', headers, ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`speech ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function silence(seconds: number, format: WireFormat = 'pcm16'): Buffer {
  return Buffer.alloc(Math.round((seconds / 0.02) * FRAME_BYTES[format]), SILENCE_BYTE[format]);
}

/** The audio as base64 `input_audio_buffer.append` events of 20 ms. */
export function appends(audio: Buffer, format: WireFormat = 'pcm16', type = 'input_audio_buffer.append'): string[] {
  const frame = FRAME_BYTES[format];
  const events: string[] = [];
  for (let i = 0; i < audio.length; i += frame) events.push(JSON.stringify({ type, audio: audio.subarray(i, i + frame).toString('base64') }));
  return events;
}

export type Event = Record<string, any> & { type: string };

/** A session socket that records the server's events. */
export class RealtimeClient {
  readonly events: Event[] = [];
  private waiters: Array<() => void> = [];
  closed: Promise<{ code: number; reason: string }>;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.events.push(JSON.parse(data.toString()) as Event);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.waiters.splice(0)) wake();
      }),
    );
  }

  /** Opens a session; listens from the start, since the first event can arrive in the same packet as the upgrade's answer. */
  static async connect(
    t: TestServer,
    query = 'intent=transcription',
    options: { apiKey?: string; prefix?: string; protocols?: string[] } = {},
  ): Promise<RealtimeClient> {
    const ws = new WebSocket(wsUrl(t.baseUrl, `${options.prefix ?? '/openai/v1'}/realtime?${query}`), options.protocols ?? [], {
      headers: { authorization: `Bearer ${options.apiKey ?? t.apiKey}` },
    });
    const client = new RealtimeClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    await client.next('session.created');
    return client;
  }

  /** A string or bytes as they are (bytes go as a binary frame); anything else as JSON text. */
  send(event: object | string | Buffer): void {
    this.ws.send(typeof event === 'string' || Buffer.isBuffer(event) ? event : JSON.stringify(event));
  }

  sendAll(events: string[]): void {
    for (const e of events) this.ws.send(e);
  }

  /** Streams events at real-time pace (one per `intervalMs`), as a microphone would. */
  async pace(events: string[], intervalMs = 20): Promise<void> {
    const t0 = performance.now();
    for (let i = 0; i < events.length; i++) {
      const due = t0 + i * intervalMs - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      this.ws.send(events[i]!);
    }
  }

  of(type: string): Event[] {
    return this.events.filter((e) => e.type === type);
  }

  /** Waits for the n-th (1-based) event of `type` matching `where`; fails on close or after `timeoutMs`. */
  async next(type: string, n = 1, where: (e: Event) => boolean = () => true, timeoutMs = 20_000): Promise<Event> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.filter((e) => e.type === type && where(e));
      if (found.length >= n) return found[n - 1]!;
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`closed before ${type}; events: ${this.summary()}`);
      if (Date.now() > deadline) throw new Error(`no ${type} within ${timeoutMs} ms; events: ${this.summary()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  summary(): string {
    return this.events.map((e) => e.type + (e.type === 'error' ? `(${e.error?.code})` : '')).join(', ');
  }

  close(): void {
    this.ws.close();
  }
}

/** GA session.update for a transcription session. */
export function gaUpdate(input: Record<string, unknown> = {}, event: Record<string, unknown> = {}): object {
  return { type: 'session.update', ...event, session: { type: 'transcription', audio: { input: { transcription: { model: 'sunjata-1' }, ...input } } } };
}
