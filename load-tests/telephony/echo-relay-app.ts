/**
 * The ConversationRelay application of the telephony load test: a `ws` WebSocket server that Kuma dials for
 * each call (the call token's relay_url). It answers each final `prompt` with the same words as `text`
 * tokens, word by word, `last: true` on the last — an app whose own time is next to nothing, so what the
 * caller waits for is Kuma's. It runs in the worker thread of the calls it serves, so that its times and the
 * callers' are on the same clock (each worker thread has its own performance.now() origin).
 *
 * Bridge mode (`reply` set): the app speaks French or English, as an LLM app behind Kuma's bilingual bridge
 * does, and answers every prompt with the same reply text (the prompt is the caller's translated words), word
 * by word; the prompt's `original` (the caller's Bambara transcript) is reported beside it.
 *
 * `ws` is fine here: a call exchanges a handful of relay messages per turn, not 50 a second.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface EchoAppEvents {
  /** A final prompt for call `callSid` arrived at `at` (performance.now()). */
  prompt(callSid: string, text: string, at: number, original?: string): void;
  /** The app's first `text` token for that prompt left at `at`. */
  answered(callSid: string, at: number): void;
  /** Something the app did not expect: an `error` or `interrupt` from Kuma, a message before `setup`. */
  notice(callSid: string | null, what: string): void;
}

export interface EchoApp {
  url: string;
  /** Relay connections Kuma opened. */
  connections(): number;
  close(): Promise<void>;
}

/** `reply`: answer every prompt with this text (bridge mode); absent, echo the prompt's words. */
export async function startEchoRelayApp(events: EchoAppEvents, reply?: string): Promise<EchoApp> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  let connections = 0;
  server.on('connection', (socket) => {
    connections++;
    let callSid: string | null = null;
    socket.on('error', () => {});
    socket.on('message', (data) => {
      const at = performance.now();
      let message: {
        type?: string;
        callSid?: string;
        voicePrompt?: string;
        last?: boolean;
        description?: string;
        utteranceUntilInterrupt?: string;
        original?: { voicePrompt?: string };
      };
      try {
        message = JSON.parse(data.toString());
      } catch {
        return events.notice(callSid, 'a relay message that is not JSON');
      }
      switch (message.type) {
        case 'setup':
          callSid = message.callSid ?? null;
          return;
        case 'prompt': {
          if (callSid === null) return events.notice(null, 'prompt before setup');
          if (message.last !== true) return;
          const text = String(message.voicePrompt ?? '');
          events.prompt(callSid, text, at, message.original?.voicePrompt);
          const words = (reply ?? text).split(/\s+/).filter(Boolean);
          words.forEach((word, i) => {
            socket.send(JSON.stringify({ type: 'text', token: i === 0 ? word : ` ${word}`, last: i === words.length - 1 }));
            if (i === 0) events.answered(callSid!, performance.now());
          });
          return;
        }
        case 'interrupt':
          return events.notice(callSid, `interrupt after ${JSON.stringify(message.utteranceUntilInterrupt)}`);
        case 'error':
          return events.notice(callSid, `error: ${message.description}`);
        default:
          return;
      }
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/relay`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
