/**
 * The `smuggling` fuzz target: raw HTTP whose body length a proxy could read differently from the server —
 * two to four Content-Length / Transfer-Encoding headers in any order with any values (repeated lengths, equal
 * or not, numbers that are not plain, codings other than `chunked`), or one coding other than `chunked` —
 * with a request hidden behind it where one of the readings takes it for the next request (right after the
 * head, after the body, inside a chunk), sent in the same packet or in a later one. The hidden request is one
 * the server answers at once (`GET /openai/v1/models` with the key, or `/healthz`), so a hidden request served
 * shows as a second response.
 *
 * Pass: exactly one answer, a 400 (Kuma's envelope, or uWS's own HTML for Content-Length with
 * Transfer-Encoding), then the server closes the connection; or a close without any answer. Failure
 * (`smuggled`): a second response, an answer other than 400, or the connection still open after the 400.
 * One case in five is a control — one plain length, a pipelined request behind it — which must get both its
 * answers (`2xx`), so the target would notice if hidden requests could not be answered at all.
 */
import net from 'node:net';
import type { HttpContext, Target } from './http-targets.js';
import { classifyHttp, type Outcome } from './outcomes.js';
import type { Rng } from './rng.js';

interface SmugglingInput {
  control: boolean;
  /** The first request, head and body, with KEY_MARK where the key goes. */
  first: string;
  hidden: string;
  /** The hidden request goes in the same write as the first, or after the first answer (or 300 ms). */
  later: boolean;
}

const KEY_MARK = 'FUZZ_API_KEY';
/** How long after the last write the server has to close an ambiguous request's connection. */
const CLOSE_WAIT_MS = 3000;

/** A Content-Length value: the body's, 0, the body's and the hidden request's, any; or one that is not a plain number. */
const lengthValue = (rng: Rng, body: number, hidden: number): string =>
  rng.pick([
    String(body),
    '0',
    String(body + hidden),
    String(rng.int(0, 300)),
    `${body} `,
    ` ${body}`,
    `0${body}`,
    `+${body}`,
    `${body},${body}`,
    `${body}, 0`,
    '-1',
    '1e3',
    '',
  ]);
const CODINGS = [
  'chunked',
  'Chunked',
  'CHUNKED',
  ' chunked',
  'chunked ',
  'identity',
  'gzip',
  'gzip, chunked',
  'chunked, gzip',
  'chunked, chunked',
  'chunked;x=1',
  'x-chunked',
  '',
];

function hiddenRequest(rng: Rng): string {
  return rng.chance(0.5)
    ? `GET /openai/v1/models HTTP/1.1\r\nHost: kuma\r\nAuthorization: Bearer ${KEY_MARK}\r\n\r\n`
    : 'GET /healthz HTTP/1.1\r\nHost: kuma\r\n\r\n';
}

export const smugglingTarget: Target<SmugglingInput> = {
  name: 'smuggling',
  generate(rng) {
    const hidden = hiddenRequest(rng);
    const later = rng.chance(0.3);
    if (rng.chance(0.2)) {
      // Control: one plain framing, the next request pipelined behind the body. Its first request is answered
      // at once (uWS closes a connection whose next request comes while an answer is still pending).
      const chunked = rng.chance(0.3);
      const body = chunked ? '2\r\n{}\r\n0\r\n\r\n' : '{}';
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`;
      return {
        control: true,
        first: `${rng.pick(['GET', 'POST'])} /healthz HTTP/1.1\r\nHost: kuma\r\nContent-Type: application/json\r\n${framing}\r\n\r\n${body}`,
        hidden,
        later,
      };
    }
    const target = rng.pick([
      'POST /openai/v1/chat/completions',
      'POST /healthz',
      'PUT /openai/v1/models',
      'GET /healthz',
      'POST /openai/v1/audio/speech',
      'GET /telephony/v1/twilio',
    ]);
    // The body as one reading or another would see it: nothing, an empty chunked body, a chunk, or raw bytes.
    const body = rng.pick(['', '0\r\n\r\n', '5\r\nhello\r\n0\r\n\r\n', '{}', `${hidden.length.toString(16)}\r\n`]);
    const headers: string[] = [];
    const count = rng.chance(0.1) ? 1 : rng.int(2, 4);
    for (let i = 0; i < count; i++) {
      const name = rng.pick(['Content-Length', 'content-length', 'Transfer-Encoding', 'transfer-encoding']);
      headers.push(name.toLowerCase() === 'content-length' ? `${name}: ${lengthValue(rng, body.length, hidden.length)}` : `${name}: ${rng.pick(CODINGS)}`);
    }
    // A single header must itself be ambiguous: a coding other than exactly `chunked`.
    if (count === 1) headers[0] = `Transfer-Encoding: ${rng.pick(CODINGS.filter((c) => c.trim().toLowerCase() !== 'chunked'))}`;
    const extra = rng.chance(0.3) ? `Authorization: Bearer ${KEY_MARK}\r\n` : '';
    return { control: false, first: `${target} HTTP/1.1\r\nHost: kuma\r\n${extra}${headers.join('\r\n')}\r\n\r\n${body}`, hidden, later };
  },
  execute: (input, ctx) => exchange(input, ctx),
  describe: (i) =>
    `${i.control ? 'control ' : ''}${i.later ? 'later ' : 'same '}${JSON.stringify(i.first.slice(0, 300))} + ${JSON.stringify(i.hidden.slice(0, 60))}`,
};

interface Answer {
  status: number;
  head: string;
  body: string;
}

/** The answers in what the server sent, in order (a body framed by Content-Length or chunked, else to the end). */
function answersIn(text: string): Answer[] {
  const answers: Answer[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end);
    let after = rest.slice(end + 4);
    let body: string;
    const length = /^content-length:\s*(\d+)/im.exec(head);
    if (length) {
      body = after.slice(0, Number(length[1]));
      after = after.slice(Number(length[1]));
    } else if (/^transfer-encoding:\s*chunked/im.test(head)) {
      const last = after.indexOf('\r\n0\r\n\r\n');
      body = after.slice(0, last < 0 ? undefined : last);
      after = last < 0 ? '' : after.slice(last + 7);
    } else {
      body = after; // delimited by the close
      after = '';
    }
    answers.push({ status: Number(head.slice(9, 12)), head, body });
    rest = after;
  }
  return answers;
}

function exchange(input: SmugglingInput, ctx: HttpContext): Promise<Outcome> {
  const fill = (s: string) => s.replaceAll(KEY_MARK, ctx.apiKey);
  return new Promise((resolve) => {
    const socket = net.connect(ctx.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    let sentHidden = !input.later;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(caseTimer);
      clearTimeout(waitTimer);
      socket.destroy();
      resolve(verdict(input, Buffer.concat(chunks).toString('latin1'), closed));
    };
    const sendHidden = () => {
      if (sentHidden) return;
      sentHidden = true;
      if (!socket.destroyed && socket.writable) socket.write(fill(input.hidden));
      waitTimer = setTimeout(finish, CLOSE_WAIT_MS);
    };
    const caseTimer = setTimeout(finish, ctx.caseTimeoutMs);
    // Same packet: wait for the close. Later packet: send it once the first answer came (or 300 ms), then wait.
    let waitTimer = setTimeout(input.later ? sendHidden : finish, input.later ? 300 : CLOSE_WAIT_MS);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (input.later && !sentHidden) {
        clearTimeout(waitTimer);
        setTimeout(sendHidden, 20);
      }
      // A control is done once both answers are in.
      if (input.control && answersIn(Buffer.concat(chunks).toString('latin1')).length >= 2) finish();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.on('connect', () => socket.write(fill(input.first) + (input.later ? '' : fill(input.hidden))));
  });
}

function verdict(input: SmugglingInput, text: string, closed: boolean): Outcome {
  const answers = answersIn(text);
  const shown = text.replace(/ {64,}/g, ' … ').slice(0, 280);
  if (input.control) {
    if (answers.length === 2 && answers[1]!.status === 200) return { kind: '2xx', status: 200 };
    return { kind: 'no-answer', detail: `a control's pipelined request got ${answers.length} answers: ${shown}` };
  }
  if (answers.length === 0) return closed ? { kind: 'closed' } : { kind: 'hang', detail: `no answer and no close: ${shown}` };
  if (answers.length > 1) return { kind: 'smuggled', status: answers[1]!.status, detail: `a request behind an ambiguous length was answered: ${shown}` };
  const [answer] = answers;
  if (answer!.status !== 400) return { kind: 'smuggled', status: answer!.status, detail: `an ambiguous length was served: ${shown}` };
  if (!closed) return { kind: 'smuggled', status: 400, detail: `the connection was still open ${CLOSE_WAIT_MS} ms after the 400: ${shown}` };
  const headers = { get: (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(answer!.head)?.[1] ?? null };
  return classifyHttp(400, headers, answer!.body, 'transport');
}
