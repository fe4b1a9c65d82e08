/**
 * A real webhook receiver for tests: a node:http server on an ephemeral port that records every request
 * (raw body, headers, parsed event) and answers as the test scripts it — a status, a delayed answer, no
 * answer at all (hang), or a dropped connection (the request arrived but its answer is lost).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebhookEnvelope } from '../../src/telephony/webhooks/events.js';

export interface ReceivedWebhook {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, as the signature covers it. */
  body: string;
  event: WebhookEnvelope;
  /** What this request was answered with (set once answered). */
  answer?: Answer;
}

export type Answer = { status: number; headers?: Record<string, string> } | 'drop';

/** Decides the answer to one request; may wait (a promise that never settles = a hanging endpoint). */
export type Responder = (request: ReceivedWebhook) => Answer | Promise<Answer>;

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Requests whose answer is still owed. */
  open(): number;
  setResponder(responder: Responder): void;
  /** Resolves once `condition` holds on what was received (checked after every request and answer). */
  until(condition: (received: ReceivedWebhook[]) => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(responder: Responder = () => ({ status: 200 })): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let respond = responder;
  let openCount = 0;
  const waiters: Array<{ condition: (r: ReceivedWebhook[]) => boolean; resolve: () => void }> = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.condition(received)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry: ReceivedWebhook = { path: req.url ?? '/', headers: req.headers, body, event: JSON.parse(body) as WebhookEnvelope };
      received.push(entry);
      openCount++;
      check();
      void Promise.resolve(respond(entry)).then((answer) => {
        openCount--;
        entry.answer = answer;
        if (answer === 'drop') req.socket.destroy();
        else res.writeHead(answer.status, answer.headers).end();
        check();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    open: () => openCount,
    setResponder: (r) => (respond = r),
    until: (condition) =>
      new Promise<void>((resolve) => {
        waiters.push({ condition, resolve });
        check();
      }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
