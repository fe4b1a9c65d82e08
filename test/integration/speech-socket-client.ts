/**
 * A `ws` client of the streaming speech socket for tests: records every message in order (each with the
 * number of text messages the client had sent when it arrived), waits for a message that matches, and
 * rebuilds the audio stream from the audio messages.
 */
import WebSocket from 'ws';
import { closed, wsUrl } from '../helpers/websocket-client.js';

export interface Received {
  json: any;
  /** How many messages the client had sent when this one arrived. */
  sentBefore: number;
}

export class SpeechSocketClient {
  readonly received: Received[] = [];
  sent = 0;
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.received.push({ json: JSON.parse(data.toString('utf8')), sentBefore: this.sent });
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = closed(ws);
    void this.closed.then(() => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Listens from the start: a message sent right after the upgrade can arrive in the same read as the 101. */
  static open(baseUrl: string, path: string, headers: Record<string, string>): Promise<SpeechSocketClient> {
    const client = new SpeechSocketClient(new WebSocket(wsUrl(baseUrl, path), { headers }));
    return new Promise((resolve, reject) => {
      client.ws.once('open', () => resolve(client));
      client.ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      client.ws.once('error', reject);
    });
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
    this.sent++;
  }

  /** The first message (received so far or later) that matches; rejects if the socket closes first. */
  async waitFor(match: (json: any) => boolean, what = 'a matching message'): Promise<Received> {
    for (let seen = 0; ;) {
      const found = this.received.slice(seen).find((r) => match(r.json));
      if (found) return found;
      seen = this.received.length;
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(`closed before ${what}: ${JSON.stringify(this.received.map((r) => r.json).filter((j) => !j.audio))}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  get audioMessages(): any[] {
    return this.received.map((r) => r.json).filter((j) => typeof j.audio === 'string');
  }

  get errors(): any[] {
    return this.received.map((r) => r.json).filter((j) => typeof j.message === 'string' && 'error' in j);
  }

  /** The audio stream: the audio messages' bytes, concatenated in order (of one context of a multi-context socket, when given). */
  audio(contextId?: string): Buffer {
    const messages = contextId === undefined ? this.audioMessages : this.audioMessages.filter((m) => m.contextId === contextId);
    return Buffer.concat(messages.map((m) => Buffer.from(m.audio, 'base64')));
  }

  /** Every alignment sent (`alignment` or `normalizedAlignment`), concatenated. */
  alignment(field: 'alignment' | 'normalizedAlignment'): { chars: string[]; charStartTimesMs: number[]; charDurationsMs: number[] } {
    const parts = this.audioMessages.map((m) => m[field]).filter(Boolean);
    return {
      chars: parts.flatMap((p) => p.chars),
      charStartTimesMs: parts.flatMap((p) => p.charStartTimesMs),
      charDurationsMs: parts.flatMap((p) => p.charDurationsMs),
    };
  }
}
