/**
 * The fuzz's HTTP targets against a Kuma server process: JSON bodies (every JSON route: speech, chat, the
 * native translate and TTS routes; and JSON sent where multipart is expected), multipart bodies
 * (transcriptions and translations, and the native transcribe routes: fields, boundaries, filenames, part
 * headers, sizes, framing), and raw HTTP over TCP (request lines, headers, framing). Native paths must
 * answer errors in their own `{detail}` shape (native-requests.ts). Each target turns a case's Rng into a request and the answer into an Outcome (outcomes.ts).
 */
import net from 'node:net';
import { nativeAuth, nativeJsonBody, nativeJsonPath, nativeTranscribePath, errorShapeOf, type NativeJsonRoute } from './native-requests.js';
import { classifyHttp, type Outcome } from './outcomes.js';
import type { Rng } from './rng.js';
import { randomJson, randomNumber, randomString, speechText } from './values.js';

export interface HttpContext {
  baseUrl: string;
  port: number;
  apiKey: string;
  /** Short valid uploads (a WAV of speech first), for multipart file parts. */
  audio: Uint8Array[];
  /** A call token (transcription mode) of the key's account, for the carrier streams. */
  callToken: string;
  caseTimeoutMs: number;
}

export interface Target<I> {
  name: string;
  generate(rng: Rng): I;
  execute(input: I, ctx: HttpContext): Promise<Outcome>;
  /** A short description of the input for findings (what was sent, abbreviated). */
  describe(input: I): string;
}

const PREFIXES = ['/openai/v1', '/compat/v1'];

interface HttpInput {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

async function send(input: HttpInput, ctx: HttpContext): Promise<Outcome> {
  const signal = AbortSignal.timeout(ctx.caseTimeoutMs);
  // fetch sends header values as bytes (latin1): non-latin1 text goes as its UTF-8 bytes, as a raw client would.
  // Control characters cannot be sent in a header value at all (fetch refuses them; raw-http covers them).
  const headers = Object.fromEntries(
    Object.entries(input.headers).map(([k, v]) => [
      k,
      Buffer.from(v.replace(/[\u0000-\u001f\u007f]/g, ''), 'utf8')
        .toString('latin1')
        .trim(),
    ]),
  );
  input = { ...input, headers };
  let res: Response;
  try {
    res = await fetch(`${ctx.baseUrl}${input.path}`, { method: input.method, headers: input.headers, body: input.body, signal });
  } catch (error) {
    if (signal.aborted) return { kind: 'hang', detail: 'no answer within the case timeout' };
    return { kind: 'no-answer', detail: String((error as Error).cause ?? error).slice(0, 300) };
  }
  try {
    const text = await res.text();
    return classifyHttp(res.status, res.headers, text, errorShapeOf(input.path));
  } catch (error) {
    if (signal.aborted) return { kind: 'hang', status: res.status, detail: 'the body did not end within the case timeout' };
    // A 2xx stream cut mid-way is the server ending a stream it started (an error event was sent): fine.
    return res.status < 300 ? { kind: '2xx', status: res.status } : { kind: 'no-answer', status: res.status, detail: String(error).slice(0, 300) };
  }
}

const describeHttp = (i: HttpInput) =>
  `${i.method} ${i.path} ${JSON.stringify(i.headers['content-type'] ?? '')} ${Buffer.from(i.body.subarray(0, 200)).toString('latin1')}${i.body.length > 200 ? `… (${i.body.length} bytes)` : ''}`;

function auth(rng: Rng, ctx: HttpContext): Record<string, string> {
  if (rng.chance(0.95)) return rng.chance(0.8) ? { authorization: `Bearer ${ctx.apiKey}` } : { 'x-api-key': ctx.apiKey };
  return rng.pick<Record<string, string>>([
    {},
    { authorization: 'Bearer ' },
    { authorization: `Basic ${ctx.apiKey}` },
    { authorization: `Bearer ${randomString(rng).replace(/[^\x20-\x7e]/g, '')}` },
  ]);
}

/** Byte-level damage: truncation, a flipped or inserted byte, a doubled slice. */
function damage(rng: Rng, bytes: Uint8Array): Uint8Array {
  const b = Buffer.from(bytes);
  switch (rng.int(0, 3)) {
    case 0:
      return b.subarray(0, rng.int(0, b.length));
    case 1: {
      if (b.length) b[rng.int(0, b.length - 1)] = rng.int(0, 255);
      return b;
    }
    case 2: {
      const at = rng.int(0, b.length);
      return Buffer.concat([b.subarray(0, at), rng.bytes(rng.int(1, 8)), b.subarray(at)]);
    }
    default: {
      const at = rng.int(0, b.length);
      const to = rng.int(at, b.length);
      return Buffer.concat([b.subarray(0, to), b.subarray(at, to), b.subarray(to)]);
    }
  }
}

// ---------------------------------------------------------------- JSON bodies

function validJson(rng: Rng, route: 'speech' | 'chat'): Record<string, unknown> {
  if (route === 'speech') {
    const body: Record<string, unknown> = {
      model: rng.pick(['jifili-1', 'tts-1', 'djelia-tts-v2']),
      input: speechText(rng, 40) || 'i ni ce',
      voice: rng.pick(['moussa', 'alloy', 'seydou']),
    };
    if (rng.chance(0.7)) body.response_format = rng.pick(['mp3', 'wav', 'pcm', 'opus', 'ulaw', 'alaw', 'l16_8000', 'l16_16000', 'fmp4', 'aac', 'flac']);
    if (rng.chance(0.3)) body.stream_format = rng.pick(['sse', 'audio']);
    if (rng.chance(0.2)) body.speed = randomNumber(rng);
    return body;
  }
  const body: Record<string, unknown> = {
    model: rng.pick(['banjugu-1', 'djelia-translate-v2', 'gpt-4o']),
    messages: [{ role: 'user', content: speechText(rng, 40) || 'i ni ce' }],
    djelia: { source_language: rng.pick(['bam_Latn', 'fra_Latn', 'eng_Latn']), target_language: rng.pick(['bam_Latn', 'fra_Latn', 'eng_Latn']) },
  };
  if (rng.chance(0.3)) body.stream = rng.chance(0.5);
  return body;
}

/** Structure-aware damage: a field replaced by any value, removed, added; a nested field likewise; the whole body replaced. */
function mutateJson(rng: Rng, body: Record<string, unknown>): unknown {
  for (let n = rng.int(0, 3); n > 0; n--) {
    const keys = Object.keys(body);
    const which = rng.int(0, 5);
    if (which === 0 && keys.length) body[rng.pick(keys)] = randomJson(rng);
    else if (which === 1 && keys.length) delete body[rng.pick(keys)];
    else if (which === 2) body[randomString(rng).slice(0, 30)] = randomJson(rng);
    else if (which === 3 && Array.isArray(body.messages)) {
      const m = body.messages as unknown[];
      if (rng.chance(0.5))
        m.push(rng.chance(0.5) ? { role: rng.pick(['user', 'system', 'assistant', 'tool', '']), content: randomJson(rng, 2) } : randomJson(rng));
      else if (m.length && typeof m[0] === 'object' && m[0]) (m[0] as Record<string, unknown>)[rng.pick(['role', 'content', 'name'])] = randomJson(rng, 2);
    } else if (which === 4 && body.djelia && typeof body.djelia === 'object') {
      (body.djelia as Record<string, unknown>)[rng.pick(['source_language', 'target_language', 'extra'])] = randomJson(rng, 1);
    } else if (which === 5 && rng.chance(0.2)) return randomJson(rng);
  }
  return body;
}

export const jsonTarget: Target<HttpInput> = {
  name: 'json',
  generate(rng) {
    const route = rng.pick(['speech', 'chat', 'speech', 'chat', 'multipart-route', 'native'] as const);
    const native = route === 'native' ? rng.pick<NativeJsonRoute>(['translate', 'tts-v1', 'tts-v2', 'tts-v2-stream']) : null;
    const path = native
      ? nativeJsonPath(rng, native)
      : `${rng.pick(PREFIXES)}${route === 'speech' ? '/audio/speech' : route === 'chat' ? '/chat/completions' : rng.pick(['/audio/transcriptions', '/audio/translations'])}`;
    const value = mutateJson(rng, native ? nativeJsonBody(rng, native) : validJson(rng, route === 'chat' ? 'chat' : 'speech'));
    let text = JSON.stringify(value) ?? 'null';
    if (rng.chance(0.02)) text = `${'['.repeat(rng.int(1000, 100_000))}1${']'.repeat(rng.int(0, 100_000))}`; // deeper than any stack
    if (rng.chance(0.05)) text = text.replace(/\}$/, `, "pad": "${'p'.repeat(rng.pick([1 << 20, 2 << 20]))}"}`); // over the JSON limit
    let body: Uint8Array = Buffer.from(text);
    if (rng.chance(0.15)) body = damage(rng, body);
    const contentType = rng.chance(0.9)
      ? 'application/json'
      : rng.pick(['text/plain', 'application/json; charset=latin1', 'multipart/form-data', '', 'application/x-www-form-urlencoded', 'application/JSON']);
    const auth = native ? nativeAuth(rng, KEY) : authFor(rng);
    return { method: 'POST', path, headers: { ...(contentType ? { 'content-type': contentType } : {}), ...auth }, body };
  },
  execute: (input, ctx) => send(withKey(input, ctx), ctx),
  describe: describeHttp,
};

// The key is only known at run time: generate() marks where it goes, execute() fills it in.
const KEY = '\u0000key\u0000';
function authFor(rng: Rng): Record<string, string> {
  return auth(rng, { apiKey: KEY } as HttpContext);
}
function withKey(input: HttpInput, ctx: HttpContext): HttpInput {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers)) headers[k] = v.replace(KEY, ctx.apiKey);
  return { ...input, headers };
}

// ---------------------------------------------------------------- multipart bodies

const FIELDS: Record<string, () => string[]> = {
  model: () => ['sunjata-1', 'whisper-1', 'djelia-asr-v3', 'banjugu-1', 'jifili-1', ''],
  response_format: () => ['json', 'text', 'srt', 'vtt', 'verbose_json', 'mp3', ''],
  language: () => ['bam_Latn', 'fra_Latn', 'eng_Latn', 'bm', 'xx'],
  stream: () => ['true', 'false', '1', 'yes', ''],
  temperature: () => ['0', '0.2', '-1', '2', 'NaN', '1e309'],
  prompt: () => ['', 'i ni ce'],
  'timestamp_granularities[]': () => ['segment', 'word', 'char'],
};

interface MultipartInput {
  path: string;
  boundary: string;
  contentType: string;
  /** -1: one of the valid uploads, with `damageFile` applied; else random bytes of that length. */
  fileChoice: number;
  randomFile: number;
  parts: { headers: string[]; kind: 'field' | 'file'; value?: string }[];
  framing: number;
  headersAuth: Record<string, string>;
  seed: number;
}

export const multipartTarget: Target<MultipartInput> = {
  name: 'multipart',
  generate(rng) {
    const boundary = rng.chance(0.85)
      ? `----kuma${rng.int(0, 1e9).toString(36)}`
      : rng.pick(['', ' ', 'a'.repeat(71), 'b"q', 'x y', '--', randomString(rng).slice(0, 80)]);
    const typeOf = rng.int(0, 9);
    const contentType =
      typeOf < 7
        ? `multipart/form-data; boundary=${boundary}`
        : typeOf === 7
          ? `multipart/form-data; boundary="${boundary}"`
          : typeOf === 8
            ? 'multipart/form-data'
            : rng.pick(['application/json', 'multipart/mixed; boundary=' + boundary, `multipart/form-data; boundary=${boundary}; boundary=other`]);
    const parts: MultipartInput['parts'] = [];
    const names = Object.keys(FIELDS);
    for (const name of names) {
      if (!rng.chance(name === 'model' ? 0.9 : 0.3)) continue;
      const value = rng.chance(0.85) ? rng.pick(FIELDS[name]!()) : randomString(rng);
      parts.push({ headers: [`Content-Disposition: form-data; name="${name}"`], kind: 'field', value });
    }
    if (rng.chance(0.9)) {
      const filename = rng.chance(0.7) ? rng.pick(['speech.wav', 'a.mp3', 'x', '']) : randomString(rng).slice(0, 200);
      const headers = [
        rng.chance(0.95)
          ? `Content-Disposition: form-data; name="file"; filename="${filename}"`
          : rng.pick([
              'Content-Disposition: form-data; name="file"',
              'Content-Disposition: attachment; filename="a.wav"',
              `Content-Disposition: form-data; name=file; filename*=UTF-8''%E2%82%AC.wav`,
            ]),
      ];
      if (rng.chance(0.6))
        headers.push(
          `Content-Type: ${rng.pick([
            'audio/wav',
            'audio/mpeg',
            'application/octet-stream',
            'text/plain',
            randomString(rng)
              .replace(/[\r\n]/g, '')
              .slice(0, 40),
          ])}`,
        );
      parts.splice(rng.int(0, parts.length), 0, { headers, kind: 'file' });
    }
    if (rng.chance(0.1))
      parts.push({
        headers: [
          rng.pick([
            'Content-Disposition: form-data; name="file"; filename="b.wav"',
            'X-Nothing: 1',
            '',
            `Content-Disposition: form-data; name="${randomString(rng).slice(0, 30)}"`,
          ]),
        ],
        kind: 'field',
        value: randomString(rng),
      });
    // A fifth of the cases go to the native transcribe routes (the primary fields are there ignored, as unknown fields are).
    const native = rng.chance(0.2);
    return {
      path: native ? nativeTranscribePath(rng) : `${rng.pick(PREFIXES)}${rng.chance(0.7) ? '/audio/transcriptions' : '/audio/translations'}`,
      boundary,
      contentType,
      fileChoice: rng.chance(0.8) ? -1 : 0,
      randomFile: rng.pick([0, 1, 44, 1000, 100_000]),
      parts,
      framing: rng.chance(0.75) ? 0 : rng.int(1, 6),
      headersAuth: native ? nativeAuth(rng, KEY) : authFor(rng),
      seed: rng.int(0, 2 ** 31),
    };
  },
  execute(input, ctx) {
    // Sub-choices that need the context (which valid upload) come from the input's own seed.
    let s = input.seed;
    const r = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
    let file: Uint8Array =
      input.fileChoice === -1 ? ctx.audio[Math.floor(r() * ctx.audio.length)]! : Uint8Array.from({ length: input.randomFile }, () => Math.floor(r() * 256));
    if (input.fileChoice === -1 && r() < 0.3) {
      file = Buffer.from(file);
      for (let i = Math.floor(r() * 4); i >= 0; i--) if (file.length) file[Math.floor(r() * file.length)] = Math.floor(r() * 256);
      if (r() < 0.3) file = file.subarray(0, Math.floor(r() * file.length));
    }
    const nl = input.framing === 1 ? '\n' : '\r\n';
    const chunks: Uint8Array[] = [];
    if (input.framing === 2) chunks.push(Buffer.from(`preamble${nl}`));
    for (const part of input.parts) {
      chunks.push(Buffer.from(`--${input.boundary}${nl}${part.headers.join(nl)}${nl}${nl}`));
      chunks.push(part.kind === 'file' ? file : Buffer.from(part.value ?? ''));
      chunks.push(Buffer.from(nl));
    }
    if (input.framing !== 3) chunks.push(Buffer.from(`--${input.boundary}--${nl}`));
    if (input.framing === 4) chunks.push(Buffer.from(`epilogue --${input.boundary}--`));
    let body: Uint8Array = Buffer.concat(chunks);
    if (input.framing === 5) body = body.subarray(0, Math.floor(r() * body.length));
    if (input.framing === 6) body = body.subarray(Math.floor(r() * 40));
    const headers = { 'content-type': input.contentType, ...input.headersAuth };
    return send(withKey({ method: 'POST', path: input.path, headers, body }, ctx), ctx);
  },
  describe: (i) =>
    `${i.path} ${JSON.stringify(i.contentType)} framing=${i.framing} file=${i.fileChoice === -1 ? 'valid' : `random ${i.randomFile}`} parts=${JSON.stringify(i.parts).slice(0, 400)}`,
};

// ---------------------------------------------------------------- raw HTTP

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'get', 'CONNECT', 'TRACE', 'PRI', 'X', '', 'G\u0000T', 'POST '.repeat(3)];
const PATHS = [
  '/healthz',
  '/readyz',
  '/metrics',
  '/openai/v1/models',
  '/compat/v1/models/sunjata-1',
  '/openai/v1/audio/speech',
  '/openai/v1/chat/completions',
  '/openai/v1/audio/transcriptions',
  '*',
  'http://kuma/openai/v1/models',
  '//',
  '/%00',
  '/../../etc/passwd',
  '/openai/v1/models/%ff%fe',
  '/openai/v1/models/' + 'a'.repeat(9000),
  '/\u00e9',
  '',
  '/openai/v1/models?x=' + '%'.repeat(50),
];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', '', 'HTTP/9.9', 'http/1.1', 'HTTP/1'];

function rawHeaders(rng: Rng): string[] {
  const h: string[] = [];
  if (rng.chance(0.9)) h.push('Host: kuma');
  if (rng.chance(0.5)) h.push(`Authorization: Bearer ${KEY}`);
  const pool = [
    () => `Content-Length: ${rng.pick(['0', '5', '100', '-1', '99999999999', 'abc', '1, 2', ' 10', '0x10'])}`,
    () => `Transfer-Encoding: ${rng.pick(['chunked', 'gzip, chunked', 'chunked, gzip', 'identity', 'xchunked', ' chunked'])}`,
    () => `Content-Type: ${rng.pick(['application/json', 'multipart/form-data; boundary=x', 'text/plain', ''])}`,
    () => `Connection: ${rng.pick(['close', 'keep-alive', 'upgrade', ''])}`,
    () => 'Expect: 100-continue',
    () => 'Upgrade: websocket',
    () => `X-Long: ${'v'.repeat(rng.pick([100, 10_000, 70_000]))}`,
    () => 'NoColonHeader',
    () => ' folded: continuation',
    () => 'Bad Name: 1',
    () => `X-Bin: ${String.fromCharCode(...rng.bytes(8))}`,
    () => `X-Api-Key: ${rng.chance(0.5) ? KEY : 'nope'}`,
    () => `Accept: ${rng.pick(['*/*', 'text/event-stream', ''])}`,
  ];
  for (let n = rng.int(0, 6); n > 0; n--) h.push(rng.pick(pool)());
  if (rng.chance(0.03)) for (let i = 0; i < 300; i++) h.push(`X-Many-${i}: ${i}`);
  return h;
}

interface RawInput {
  bytes: Buffer;
}

export const rawHttpTarget: Target<RawInput> = {
  name: 'raw-http',
  generate(rng) {
    const nl = rng.chance(0.9) ? '\r\n' : rng.pick(['\n', '\r', '\n\r']);
    const line = rng.chance(0.95) ? `${rng.pick(METHODS)} ${rng.pick(PATHS)} ${rng.pick(VERSIONS)}` : String.fromCharCode(...rng.bytes(rng.int(0, 60)));
    const head = [line, ...rawHeaders(rng)].join(nl) + nl + nl;
    const body = rng.chance(0.5)
      ? Buffer.alloc(0)
      : rng.chance(0.5)
        ? Buffer.from(rng.pick(['{}', '{"model":"jifili-1","input":"i ni ce","voice":"moussa"}', '5\r\nhello\r\n0\r\n\r\n', 'zz\r\nx\r\n', '0\r\n\r\n']))
        : Buffer.from(rng.bytes(rng.int(1, 2000)));
    let bytes = Buffer.concat([Buffer.from(head, 'latin1'), body]);
    if (rng.chance(0.1)) bytes = Buffer.concat([bytes, bytes]); // two requests in one write (pipelining)
    if (rng.chance(0.1)) bytes = bytes.subarray(0, rng.int(0, bytes.length));
    return { bytes };
  },
  execute: (input, ctx) => rawExchange(Buffer.from(input.bytes.toString('latin1').replaceAll(KEY, ctx.apiKey), 'latin1'), ctx),
  describe: (i) => JSON.stringify(i.bytes.subarray(0, 400).toString('latin1')),
};

/**
 * Writes the bytes, half-closes, and reads until the server closes. After our FIN, a server that has
 * answered or given up must close; one that neither answers nor closes within the timeout is a hang.
 * The first status line decides the outcome; a close without any answer is 'closed' (uWS drops what it
 * cannot parse).
 */
function rawExchange(bytes: Buffer, ctx: HttpContext): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect(ctx.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (outcome: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish(verdict(true)), ctx.caseTimeoutMs);
    const verdict = (timedOut: boolean): Outcome => {
      // Interim answers (100 Continue to an Expect header) come before the real one: skip them.
      const text = Buffer.concat(chunks)
        .toString('latin1')
        .replace(/^(HTTP\/1\.[01] 1\d\d[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n)+/, '');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!m) return timedOut ? { kind: 'hang', detail: 'no answer and no close' } : { kind: 'closed' };
      const status = Number(m[1]);
      const split = text.indexOf('\r\n\r\n');
      const head = split >= 0 ? text.slice(0, split) : text;
      let body = split >= 0 ? text.slice(split + 4) : '';
      // An answer to HEAD has no body (RFC 9110 §9.3.2), whatever its Content-Length says: what follows its head
      // is the next pipelined request's answer. (uWS's own refusal of a request it cannot parse is framed by the
      // close, with neither header, and its body is the page that names uWS.)
      const framed = /^(content-length|transfer-encoding):/im.test(head);
      if (bytes.subarray(0, 5).toString('latin1') === 'HEAD ' && framed) body = '';
      else if (/transfer-encoding:\s*chunked/i.test(head)) body = body.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n[\s\S]*$/, '');
      else {
        const length = /content-length:\s*(\d+)/i.exec(head);
        if (length) body = body.slice(0, Number(length[1]));
      }
      const headers = { get: (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1] ?? null };
      return classifyHttp(status, headers, body, 'transport');
    };
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => finish(verdict(false)));
    socket.on('close', () => finish(verdict(false)));
    socket.on('connect', () => socket.end(bytes));
  });
}
