/**
 * The multipart parser against bad input. First hand-picked cases (missing final boundary, truncation,
 * garbage, wrong Content-Types) with the exact error each must give; then seeded random-mutation fuzzing:
 * valid bodies are damaged (flipped bytes, deleted and duplicated ranges, stray CRLFs and boundary
 * fragments, truncation) and fed with random chunking, and whatever the damage, the parser must settle
 * quickly with a form or an ApiError of 400, 413 or 415 — never another error, never a hang — and leave
 * no temp file behind.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { parseMultipart, type MultipartLimits } from '../../../src/transport/multipart.js';

const BOUNDARY = 'fuzzBoundary0123';
const CT = `multipart/form-data; boundary=${BOUNDARY}`;
const CASES_PER_SEED_BODY = 700;
const PER_CASE_TIMEOUT_MS = 2000;

/** mulberry32, so a failing case can be replayed from its printed seed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function part(headers: string[], value: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n${headers.join('\r\n')}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n')]);
}
const disposition = (name: string, filename?: string) =>
  `Content-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;
const END = Buffer.from(`--${BOUNDARY}--\r\n`);
const audio = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 7) % 256));

// Shapes the real clients send: the OpenAI SDK, curl -F with an untyped file, a browser form with an
// octet-stream text part, a big (spilling) upload, and bracket-heavy fields.
const SEEDS: Buffer[] = [
  Buffer.concat([
    part([disposition('file', 'speech.wav'), 'Content-Type: audio/wav'], audio(300)),
    part([disposition('model')], 'whisper-1'),
    part([disposition('timestamp_granularities[]')], 'word'),
    part([disposition('timestamp_granularities[]')], 'segment'),
    END,
  ]),
  Buffer.concat([part([disposition('model')], 'kuma'), part([disposition('file', 'a.mp3')], audio(200)), END]),
  Buffer.concat([
    part([disposition('language'), 'Content-Type: application/octet-stream'], 'bm'),
    part([disposition('file', 'x'), 'Content-Type: foo/bar'], audio(64)),
    END,
  ]),
  Buffer.concat([part([disposition('file', 'big.wav'), 'Content-Type: audio/wave'], audio(3000)), part([disposition('prompt')], 'i ni ce'), END]),
  Buffer.concat([
    part([disposition('djelia[chunk_size]')], '0.5'),
    part([disposition('djelia[lang]')], 'bm'),
    part([disposition('file', 'b.ogg'), 'Content-Type: application/octet-stream'], audio(500)),
    END,
  ]),
];

const FRAGMENTS = [
  '\r\n',
  '\r\n\r\n',
  '\r',
  '--',
  `--${BOUNDARY}`,
  `\r\n--${BOUNDARY}\r\n`,
  `--${BOUNDARY}--`,
  'Content-Disposition: form-data; name="z"',
  '; filename="f"',
  '"',
  ';',
  ':',
];

function mutate(body: Buffer, rand: () => number): Buffer {
  let out = Buffer.from(body);
  const at = () => Math.floor(rand() * (out.length + 1));
  const count = 1 + Math.floor(rand() * 4);
  for (let m = 0; m < count; m++) {
    const start = at();
    const end = Math.min(out.length, start + 1 + Math.floor(rand() * 40));
    switch (Math.floor(rand() * 6)) {
      case 0: // flip bytes
        for (let i = start; i < end && i < out.length; i += 1 + Math.floor(rand() * 8)) out[i] = Math.floor(rand() * 256);
        break;
      case 1: // delete a range
        out = Buffer.concat([out.subarray(0, start), out.subarray(end)]);
        break;
      case 2: // duplicate a range
        out = Buffer.concat([out.subarray(0, end), out.subarray(start, end), out.subarray(end)]);
        break;
      case 3: // insert a CRLF, boundary or header fragment
        out = Buffer.concat([out.subarray(0, start), Buffer.from(FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)]!), out.subarray(start)]);
        break;
      case 4: // truncate
        out = out.subarray(0, start);
        break;
      default: // leave as is: some valid bodies keep the accept path honest
        break;
    }
  }
  return out;
}

async function* randomChunks(buf: Buffer, rand: () => number): AsyncGenerator<Uint8Array> {
  const max = rand() < 0.3 ? 2 : 200; // often tiny chunks, to split boundaries and headers everywhere
  for (let at = 0; at < buf.length;) {
    const size = 1 + Math.floor(rand() * max);
    yield buf.subarray(at, at + size);
    at += size;
  }
}

function contentTypeFor(rand: () => number): string {
  const r = rand();
  if (r < 0.94) return CT;
  if (r < 0.96) return 'application/json';
  if (r < 0.98) return 'multipart/form-data';
  return `multipart/form-data; boundary="${BOUNDARY}"; charset=utf-8`;
}

let tmpDir: string;
beforeAll(async () => {
  tmpDir = await mkdtemp(path.join(os.tmpdir(), 'kuma-multipart-fuzz-'));
});
afterAll(async () => {
  await rm(tmpDir, { recursive: true, force: true });
});

// Small limits so that spilling, 413 and the field/file counts are all reached by mutations.
const limits = (): MultipartLimits => ({
  maxFileBytes: 2500,
  maxFieldBytes: 64,
  maxFields: 6,
  maxFiles: 2,
  spillThresholdBytes: 128,
  tmpDir,
});

async function* bytewise(buf: Buffer): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < buf.length; i++) yield buf.subarray(i, i + 1);
}

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

// A hang must fail in seconds, not at the 30 s suite timeout.
describe('malformed bodies and content types', { timeout: 5000 }, () => {
  const body = SEEDS[0]!; // OpenAI SDK shape: the file part first, with a Content-Type

  it('missing final boundary rejects with invalid_multipart instead of hanging', async () => {
    const err = await rejection(parseMultipart(CT, bytewise(body.subarray(0, body.length - END.length)), limits()));
    expect([err.status, err.code]).toEqual([400, 'invalid_multipart']);
    expect(await readdir(tmpDir)).toEqual([]); // the 300-byte file had spilled
  });

  it.each([
    ['a body ending mid-header', body.subarray(0, body.indexOf('Content-Type') + 5)],
    ['a body ending mid-file', body.subarray(0, body.indexOf('\r\n\r\n') + 100)],
    ['an empty body', Buffer.alloc(0)],
    ['garbage', Buffer.from('this is not multipart at all\r\n\r\n--nope--')],
    ['a malformed part header', Buffer.from(`--${BOUNDARY}\r\nContent-Disposition form-data\r\n\r\nx\r\n--${BOUNDARY}--`)],
    ['a part without a name', Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; filename="a"\r\n\r\nx\r\n--${BOUNDARY}--`)],
  ])('rejects %s with invalid_multipart', async (_label, bad) => {
    expect((await rejection(parseMultipart(CT, bytewise(bad), limits()))).code).toBe('invalid_multipart');
  });

  it.each([
    ['application/json', 415, 'unsupported_content_type'],
    ['text/plain', 415, 'unsupported_content_type'],
    ['multipart/mixed; boundary=x', 415, 'unsupported_content_type'],
    ['', 415, 'unsupported_content_type'],
    ['multipart/form-data', 400, 'invalid_multipart'], // no boundary
    ['multipart/form-data; charset=utf-8', 400, 'invalid_multipart'],
    ['multipart/form-data; boundary=', 400, 'invalid_multipart'],
  ])('rejects Content-Type %j with %i before reading the body', async (type, status, code) => {
    async function* untouchable(): AsyncGenerator<Uint8Array> {
      throw new Error('the body was read'); // would surface as a non-ApiError
    }
    const err = await rejection(parseMultipart(type, untouchable(), limits()));
    expect([err.status, err.code]).toEqual([status, code]);
  });
});

type Outcome = 'form' | 400 | 413 | 415;

/** One mutated body through the parser: what it settled with, or 'timeout'; anything else fails. */
async function runCase(caseSeed: number, seedBody: Buffer): Promise<Outcome | 'timeout'> {
  const rand = prng(caseSeed);
  const body = mutate(seedBody, rand);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), PER_CASE_TIMEOUT_MS);
  });
  const parsing = parseMultipart(contentTypeFor(rand), randomChunks(body, rand), limits()).then(
    (form) => ({ form }),
    (error: unknown) => ({ error }),
  );
  const result = await Promise.race([parsing, timeout]);
  clearTimeout(timer);
  if (result === 'timeout') return result;
  if ('error' in result) {
    const { error } = result;
    // Printed with the seed, so a failure can be replayed with runCase(seed, SEEDS[n]).
    expect(error, `case ${caseSeed}: ${String(error)}`).toBeInstanceOf(ApiError);
    expect([400, 413, 415], `case ${caseSeed}: ${(error as ApiError).message}`).toContain((error as ApiError).status);
    return (error as ApiError).status as Outcome;
  }
  for (const file of Object.values(result.form.files)) expect((await file.read()).length, `case ${caseSeed}`).toBe(file.size);
  await result.form.dispose();
  return 'form';
}

describe('seeded random-mutation fuzzing', () => {
  const outcomes = new Map<Outcome | 'timeout', number>();

  it.each(SEEDS.map((body, n) => [n, body] as const))(
    `seed body %i: ${CASES_PER_SEED_BODY} mutations each settle with a form or a 400/413/415 ApiError, leaving no temp file`,
    async (n, seedBody) => {
      for (let c = 0; c < CASES_PER_SEED_BODY; c++) {
        const caseSeed = n * 100_000 + c;
        const outcome = await runCase(caseSeed, seedBody);
        expect(outcome, `case ${caseSeed} hung`).not.toBe('timeout');
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        expect(await readdir(tmpDir), `case ${caseSeed}`).toEqual([]);
      }
    },
  );

  it(`reaches both sides over all ${SEEDS.length * CASES_PER_SEED_BODY} cases: bodies that still parse and each kind of rejection`, () => {
    expect(outcomes.get('form')).toBeGreaterThan(100);
    expect(outcomes.get(400)).toBeGreaterThan(100);
    expect(outcomes.get(413)).toBeGreaterThan(0);
    expect(outcomes.get(415)).toBeGreaterThan(0);
  });
});
