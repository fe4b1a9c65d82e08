/**
 * The multipart/form-data parser against what real clients send (OpenAI SDK, curl, browsers): bodies
 * built by hand and fed through chunkers (whole, 1-byte, random, split on boundaries), every part order,
 * odd file types, bracket fields, limits, backpressure, and temp-file hygiene (a fresh tmpDir per test,
 * checked empty). Malformed bodies and content types are in multipart-fuzz.test.ts.
 */
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { parseMultipart, type MultipartForm, type MultipartLimits } from '../../../src/transport/multipart.js';

const BOUNDARY = '----KumaBoundary7MA4YWxkTrZu0gW';
const CT = `multipart/form-data; boundary=${BOUNDARY}`;

interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  type?: string;
}

function buildBody(parts: Part[], { final = true } = {}): Buffer {
  const out = parts.flatMap((p) => {
    const filename = p.filename === undefined ? '' : `; filename="${p.filename}"`;
    const type = p.type === undefined ? '' : `\r\nContent-Type: ${p.type}`;
    const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${filename}${type}\r\n\r\n`;
    return [Buffer.from(head), Buffer.from(p.value), Buffer.from('\r\n')];
  });
  return Buffer.concat(final ? [...out, Buffer.from(`--${BOUNDARY}--\r\n`)] : out);
}

/** mulberry32: small and seeded, so every chunking is reproducible. */
const prng = (seed: number) => (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

async function* chunksAt(buf: Buffer, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < buf.length)].sort((a, b) => a - b).concat(buf.length)) {
    if (cut > start) yield new Uint8Array(buf.subarray(start, cut)); // a plain Uint8Array copy, not a Buffer
    start = cut;
  }
}
const whole = (buf: Buffer) => chunksAt(buf, []);
const bytewise = (buf: Buffer) =>
  chunksAt(
    buf,
    Array.from({ length: buf.length }, (_, i) => i),
  );
function randomChunks(buf: Buffer, seed: number, max = 64): AsyncGenerator<Uint8Array> {
  const rand = prng(seed);
  const cuts: number[] = [];
  for (let at = 0; at < buf.length; at += 1 + Math.floor(rand() * max)) cuts.push(at);
  return chunksAt(buf, cuts);
}
/** Cuts inside every "\r\n--boundary", so busboy has to carry a partial match across chunks. */
function boundarySplit(buf: Buffer, offset: number): AsyncGenerator<Uint8Array> {
  const cuts: number[] = [];
  for (let i = buf.indexOf(BOUNDARY); i !== -1; i = buf.indexOf(BOUNDARY, i + 1)) cuts.push(i + offset);
  return chunksAt(buf, cuts);
}

let tmpDir: string;
beforeEach(async () => {
  tmpDir = await mkdtemp(path.join(os.tmpdir(), 'kuma-multipart-'));
});
afterEach(async () => {
  await rm(tmpDir, { recursive: true, force: true });
});

function limits(overrides: Partial<MultipartLimits> = {}): MultipartLimits {
  return { maxFileBytes: 1 << 20, maxFieldBytes: 1024, maxFields: 20, maxFiles: 2, spillThresholdBytes: 4096, tmpDir, ...overrides };
}
function parse(body: Buffer | AsyncIterable<Uint8Array>, overrides: Partial<MultipartLimits> = {}, contentType = CT) {
  return parseMultipart(contentType, Buffer.isBuffer(body) ? whole(body) : body, limits(overrides));
}

async function expectApiError(promise: Promise<unknown>, code: string, param: string | null = null): Promise<ApiError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe(code);
  expect((err as ApiError).param).toBe(param);
  return err as ApiError;
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const all: Buffer[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return Buffer.concat(all);
}

async function summarize(form: MultipartForm) {
  const files: Record<string, unknown> = {};
  for (const [name, { filename, contentType, size, read }] of Object.entries(form.files)) {
    files[name] = {
      filename,
      contentType,
      size,
      sha: createHash('sha256')
        .update(await read())
        .digest('hex'),
    };
  }
  return { fields: form.fields, files };
}

// Every byte value plus a near-boundary, so no content can be mistaken for a delimiter.
const AUDIO = Buffer.concat([Buffer.from('RIFF'), Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256)), Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}x`)]);
const BIG = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 256));
const OPENAI_PARTS: Part[] = [
  { name: 'file', value: AUDIO, filename: 'speech.wav', type: 'audio/wav' },
  { name: 'model', value: 'whisper-1' },
  { name: 'response_format', value: 'verbose_json' },
  { name: 'timestamp_granularities[]', value: 'word' },
  { name: 'timestamp_granularities[]', value: 'segment' },
  { name: 'djelia[chunk_size]', value: '0.5' },
];
const EXPECTED_FIELDS = {
  model: 'whisper-1',
  response_format: 'verbose_json',
  timestamp_granularities: ['word', 'segment'],
  djelia: { chunk_size: '0.5' },
};

describe('chunking', () => {
  const body = buildBody(OPENAI_PARTS);
  it.each([false, true])('gives the same form for whole, 1-byte, random and boundary-split chunks (spilled: %s)', async (spill) => {
    const lim = { spillThresholdBytes: spill ? 100 : 1 << 20 };
    const reference = await parse(body, lim);
    const expected = await summarize(reference);
    expect(expected.fields).toEqual(EXPECTED_FIELDS);
    expect(reference.files.file!.path !== null).toBe(spill);
    expect(await reference.files.file!.read()).toEqual(AUDIO);
    await reference.dispose();
    const randomFeeds = [1, 2, 3, 4, 5, 6, 7, 8].map((seed) => randomChunks(body, seed));
    const splitFeeds = [-2, 0, 1, 5, BOUNDARY.length].map((offset) => boundarySplit(body, offset));
    for (const feed of [bytewise(body), ...randomFeeds, ...splitFeeds]) {
      const form = await parse(feed, lim);
      expect(await summarize(form)).toEqual(expected);
      await form.dispose();
    }
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('keeps a 50 KB in-memory file intact across chunks of 1 byte to 9 KB', async () => {
    const body = buildBody([{ name: 'file', value: BIG, filename: 'big.wav' }]);
    for (const feed of [bytewise(body), randomChunks(body, 11, 9000), randomChunks(body, 12, 5000)]) {
      expect(await (await parse(feed, { spillThresholdBytes: 1 << 20 })).files.file!.read()).toEqual(BIG);
    }
  });

  it('accepts a preamble before the first boundary and an epilogue after the last', async () => {
    const body = Buffer.concat([Buffer.from('preamble\r\n'), buildBody([{ name: 'model', value: 'm' }]), Buffer.from('epilogue')]);
    expect((await parse(randomChunks(body, 9))).fields).toEqual({ model: 'm' });
  });
});

describe('part order', () => {
  const permutations = <T>(items: T[]): T[][] =>
    items.length <= 1 ? [items] : items.flatMap((x, i) => permutations(items.filter((_, j) => j !== i)).map((rest) => [x, ...rest]));

  it('parses all 720 orders of the OpenAI SDK parts to the same form', async () => {
    const orders = permutations(OPENAI_PARTS);
    expect(orders).toHaveLength(720);
    for (const [i, order] of orders.entries()) {
      const form = await parse(randomChunks(buildBody(order), i));
      // Repeated `[]` keys keep their relative order, which is all a permutation can promise.
      const grans = order.filter((p) => p.name === 'timestamp_granularities[]').map((p) => p.value);
      expect(form.fields).toEqual({ ...EXPECTED_FIELDS, timestamp_granularities: grans });
      expect(await form.files.file!.read()).toEqual(AUDIO);
    }
  });
});

describe('file and field typing', () => {
  it.each([
    ['untyped', undefined, null],
    ['application/octet-stream', 'application/octet-stream', 'application/octet-stream'],
    ['audio/wave', 'audio/wave', 'audio/wave'],
    ['foo/bar', 'foo/bar', 'foo/bar'],
    ['explicitly text/plain (reported as untyped)', 'text/plain', null],
    ['audio/ogg with parameters', 'audio/ogg; codecs=opus', 'audio/ogg'],
  ])('treats a part with a filename as a file when it is %s', async (_label, type, expected) => {
    const body = buildBody([
      { name: 'file', value: AUDIO, filename: 'a.bin', type },
      { name: 'model', value: 'm' },
    ]);
    const form = await parse(randomChunks(body, 3));
    expect(form.files.file).toMatchObject({ field: 'file', filename: 'a.bin', contentType: expected, size: AUDIO.length, path: null });
    expect(form.fields).toEqual({ model: 'm' });
  });

  it('treats parts without a filename as text fields, whatever their Content-Type', async () => {
    const form = await parse(
      bytewise(
        buildBody([
          { name: 'a', value: 'plain', type: 'text/plain; charset=utf-8' },
          { name: 'b', value: '{"x":1}', type: 'application/json' },
          { name: 'c', value: 'bytes', type: 'application/octet-stream' }, // busboy itself calls this one a file
        ]),
      ),
    );
    expect(form.fields).toEqual({ a: 'plain', b: '{"x":1}', c: 'bytes' });
    expect(form.files).toEqual({});
  });

  it('keeps the first file of a repeated file field, with its UTF-8 filename stripped of client paths', async () => {
    const first = { name: 'file', value: AUDIO, filename: 'C:\\voix\\sɔgɔma ní.wav' };
    const body = buildBody([first, { name: 'file', value: '2', filename: 'b' }]);
    const form = await parse(randomChunks(body, 4));
    expect(form.files.file!.filename).toBe('sɔgɔma ní.wav');
    expect(await collect(form.files.file!.stream())).toEqual(AUDIO);
  });
});

describe('bracket field names', () => {
  it('collects key[] into arrays, key[sub] into objects, and keeps the last plain repeat', async () => {
    const form = await parse(
      randomChunks(
        buildBody([
          { name: 'tags[]', value: 'a' },
          { name: 'tags[]', value: 'b' },
          { name: 'tags[]', value: 'c' },
          { name: 'djelia[chunk_size]', value: '0.5' },
          { name: 'djelia[lang]', value: 'bm' },
          { name: 'language', value: 'fr' },
          { name: 'language', value: 'bm' },
          { name: 'a[b][c]', value: 'nested' },
        ]),
        5,
      ),
    );
    expect(form.fields).toEqual({ tags: ['a', 'b', 'c'], djelia: { chunk_size: '0.5', lang: 'bm' }, language: 'bm', 'a[b][c]': 'nested' });
  });

  it('stores __proto__ names as plain data without touching prototypes', async () => {
    const form = await parse(
      buildBody([
        { name: '__proto__[polluted]', value: 'yes' },
        { name: '__proto__', value: 'x' },
      ]),
    );
    expect(Object.getPrototypeOf(form.fields)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(form.fields, '__proto__')).toBe(true);
  });
});

describe('limits and temp files', () => {
  const bigFile = (extra: Part[] = [], final = true) => buildBody([{ name: 'file', value: BIG, filename: 'big.wav' }, ...extra], { final });

  it('rejects a file over maxFileBytes with 413 audio_too_large naming the field, and accepts one at the limit', async () => {
    const over = parse(randomChunks(bigFile(), 1), { maxFileBytes: BIG.length - 1, spillThresholdBytes: 1000 });
    expect((await expectApiError(over, 'audio_too_large', 'file')).status).toBe(413);
    expect(await readdir(tmpDir)).toEqual([]);
    expect((await parse(bigFile(), { maxFileBytes: BIG.length })).files.file!.size).toBe(BIG.length);
  });

  it('rejects a field over maxFieldBytes (typed or not), too many fields and too many files', async () => {
    const field = (value: string, type?: string) => buildBody([{ name: 'prompt', value, type }]);
    await expect(parse(field('x'.repeat(10)), { maxFieldBytes: 10 })).resolves.toBeTruthy();
    await expectApiError(parse(field('x'.repeat(11)), { maxFieldBytes: 10 }), 'invalid_multipart', 'prompt');
    await expectApiError(parse(field('x'.repeat(11), 'application/octet-stream'), { maxFieldBytes: 10 }), 'invalid_multipart', 'prompt');
    const fields = buildBody(Array.from({ length: 4 }, (_, i) => ({ name: `f${i}`, value: 'v' })));
    await expectApiError(parse(fields, { maxFields: 3 }), 'invalid_multipart');
    const files = buildBody(Array.from({ length: 3 }, (_, i) => ({ name: `f${i}`, value: 'v', filename: 'a' })));
    await expectApiError(parse(files, { maxFiles: 2 }), 'invalid_multipart', 'f2');
  });

  it('spills a file above spillThresholdBytes to tmpDir, reads it back byte-identical, and dispose() removes it', async () => {
    const form = await parse(randomChunks(bigFile(), 2), { spillThresholdBytes: 1000 });
    const file = form.files.file!;
    expect(path.dirname(file.path!)).toBe(tmpDir);
    expect(path.basename(file.path!)).toMatch(/^kuma-upload-[0-9a-f]+$/);
    expect((await stat(file.path!)).size).toBe(BIG.length);
    expect(await file.read()).toEqual(BIG);
    expect(await collect(file.stream())).toEqual(BIG);
    await form.dispose();
    await form.dispose();
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('pulls no chunk while earlier ones are still on their way to the temp file (backpressure)', async () => {
    const MB = 1 << 20;
    const header = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n`);
    const chunks = Array.from({ length: 16 }, (_, i) => Buffer.concat([i === 0 ? header : Buffer.alloc(0), Buffer.alloc(MB, 0x61)]));
    let pulled = 0;
    let worstInFlight = 0;
    // Nothing in here awaits: a parser that did not wait would pull all 16 chunks in one run of
    // microtasks, before a single temp-file write could complete. Sync fs calls only observe.
    async function* body(): AsyncGenerator<Uint8Array> {
      for (const chunk of chunks) {
        pulled += chunk.length;
        yield chunk;
        const [name] = readdirSync(tmpDir);
        const onDisk = name === undefined ? 0 : statSync(path.join(tmpDir, name)).size;
        worstInFlight = Math.max(worstInFlight, pulled - header.length - onDisk);
      }
      yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
    }
    const form = await parse(body(), { maxFileBytes: 32 * MB, spillThresholdBytes: 1000 });
    expect(form.files.file!.size).toBe(16 * MB);
    // Stream semantics allow the chunk that filled the temp file's buffer plus one parked in busboy's
    // file stream; without backpressure all 16 MB would be pulled before the disk caught up.
    expect(worstInFlight).toBeLessThanOrEqual(3 * MB);
    await form.dispose();
  });

  it('yields to the event loop at least every 256 KiB of a body that is all there at once', async () => {
    // 1 MiB kept in memory (no temp-file waits), in 64 KiB chunks all queued already: a parser that only
    // awaited the body parsed it in one run of microtasks, and every other request on the event loop
    // waited for it (issue P12 point 13). Counted in turns of the loop, not in time.
    const file = Buffer.alloc(1 << 20, 0x62);
    const body = buildBody([{ name: 'file', value: file, filename: 'a.wav' }]);
    let turns = 0;
    let counting = true;
    const tick = () => {
      if (!counting) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const form = await parse(
      chunksAt(
        body,
        Array.from({ length: 17 }, (_, i) => i * 64 * 1024),
      ),
      { maxFileBytes: 2 << 20, spillThresholdBytes: 4 << 20 },
    );
    counting = false;
    expect(form.files.file!.size).toBe(file.length);
    expect(turns).toBeGreaterThanOrEqual(4);
    await form.dispose();
  });

  it('removes an already written temp file when the body then turns out truncated', async () => {
    const truncated = bigFile([{ name: 'model', value: 'm' }], false);
    await expectApiError(parse(randomChunks(truncated, 6), { spillThresholdBytes: 1000 }), 'invalid_multipart');
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('rejects promptly with the signal reason on abort mid-upload and removes the temp file', async () => {
    const controller = new AbortController();
    const head = bigFile([], false).subarray(0, 20_000);
    async function* stalled(): AsyncGenerator<Uint8Array> {
      yield head;
      await new Promise(() => {}); // the client stops sending: only the abort can end this
    }
    const parsing = parseMultipart(CT, stalled(), limits({ spillThresholdBytes: 1000 }), controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(tmpDir)).toHaveLength(1);
    const reason = new Error('client went away');
    controller.abort(reason);
    await expect(parsing).rejects.toBe(reason);
    expect(await readdir(tmpDir)).toEqual([]);
    await expect(parseMultipart(CT, whole(head), limits(), controller.signal)).rejects.toBe(reason);
  });
});
