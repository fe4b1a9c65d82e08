/**
 * POST /audio/transcriptions through the real openai SDK against a server with the demo models, on both
 * prefixes: every response format, streaming, exact transcripts and real segment times, and the ledger.
 */
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { sseEvents } from '../helpers/sse.js';

const PHRASES = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'ɔ ɲɔ ŋa kɛnɛ'];
const audio = spokenPhrases(PHRASES);
const upload = () => toFile(wavBytes(audio.samples, 16000), 'speech.wav', { type: 'audio/wav' });
/** One 20 ms model frame, plus the 5 ms of window a CTC frame spans beyond its hop. */
const FRAME = 0.025;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

for (const prefix of ['/compat/v1', '/openai/v1']) {
  describe(`transcriptions under ${prefix}`, () => {
    const client = () => new OpenAI({ apiKey: t.apiKey, baseURL: t.baseUrl + prefix, maxRetries: 0 });

    it('json: the exact transcript, with duration usage', async () => {
      const res = await client().audio.transcriptions.create({ file: await upload(), model: 'sunjata-1' });
      expect(res.text).toBe(PHRASES.join(' '));
      expect((res as unknown as { usage: unknown }).usage).toEqual({ type: 'duration', seconds: Math.ceil(audio.seconds * 1000) / 1000 });
    });

    it('text: the transcript as text/plain (a string in the SDK)', async () => {
      const res = await client().audio.transcriptions.create({ file: await upload(), model: 'whisper-1', response_format: 'text' });
      expect(res).toBe(PHRASES.join(' '));
    });

    it('verbose_json: segments at the known positions of the speech, within one model frame', async () => {
      const res = (await client().audio.transcriptions.create({
        file: await upload(),
        model: 'sunjata-1',
        response_format: 'verbose_json',
        timestamp_granularities: ['segment'],
      })) as any;
      expect(res).toMatchObject({ task: 'transcribe', language: 'bambara', text: PHRASES.join(' ') });
      expect(res.duration).toBeCloseTo(audio.seconds, 2);
      expect(res.segments.map((s: any) => s.text)).toEqual(PHRASES);
      res.segments.forEach((s: any, i: number) => {
        expect(s).toMatchObject({ id: i, seek: 0, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 });
        expect(Math.abs(s.start - audio.spans[i]!.start)).toBeLessThanOrEqual(FRAME);
        expect(Math.abs(s.end - audio.spans[i]!.end)).toBeLessThanOrEqual(FRAME);
      });
    });

    it('srt and vtt: cues with the real timings', async () => {
      const srt = (await client().audio.transcriptions.create({ file: await upload(), model: 'sunjata-1', response_format: 'srt' })) as unknown as string;
      const vtt = (await client().audio.transcriptions.create({ file: await upload(), model: 'sunjata-1', response_format: 'vtt' })) as unknown as string;
      expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
      const times = (text: string, sep: string) =>
        [...text.matchAll(new RegExp(`(\\d\\d):(\\d\\d):(\\d\\d)\\${sep}(\\d{3}) --> (\\d\\d):(\\d\\d):(\\d\\d)\\${sep}(\\d{3})`, 'g'))].map((m) => {
          const n = m.slice(1).map(Number);
          return [n[0]! * 3600 + n[1]! * 60 + n[2]! + n[3]! / 1000, n[4]! * 3600 + n[5]! * 60 + n[6]! + n[7]! / 1000];
        });
      for (const cues of [times(srt, ','), times(vtt, '.')]) {
        expect(cues).toHaveLength(PHRASES.length);
        cues.forEach(([start, end], i) => {
          expect(Math.abs(start! - audio.spans[i]!.start)).toBeLessThanOrEqual(FRAME);
          expect(Math.abs(end! - audio.spans[i]!.end)).toBeLessThanOrEqual(FRAME);
        });
      }
      for (const phrase of PHRASES) expect(srt).toContain(`\n${phrase}\n`);
    });

    it('stream: segment and delta events, then done with usage, then [DONE]', async () => {
      const stream = await client().audio.transcriptions.create({ file: await upload(), model: 'sunjata-1', stream: true });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      const types = events.map((e) => e.type);
      expect(types).toEqual([
        'transcript.text.segment',
        'transcript.text.delta',
        'transcript.text.segment',
        'transcript.text.delta',
        'transcript.text.segment',
        'transcript.text.delta',
        'transcript.text.done',
      ]);
      expect(
        events
          .filter((e) => e.type === 'transcript.text.delta')
          .map((e) => e.delta)
          .join(''),
      ).toBe(PHRASES.join(' '));
      expect(events[0]).toMatchObject({ id: 'seg_0', text: PHRASES[0], speaker: 'A' });
      expect(events.at(-1)).toMatchObject({ text: PHRASES.join(' '), usage: { type: 'duration', seconds: Math.ceil(audio.seconds * 1000) / 1000 } });
    });
  });
}

describe('the raw wire', () => {
  const post = (fields: Record<string, string>) => {
    const form = new FormData();
    form.append('file', new Blob([wavBytes(audio.samples, 16000)]), 'a.wav');
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    return fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
  };

  it('labels text formats as non-JSON and every SSE data line is JSON or [DONE]', async () => {
    expect((await post({ response_format: 'text' })).headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await post({ response_format: 'srt' })).headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await post({ response_format: 'vtt' })).headers.get('content-type')).toBe('text/vtt; charset=utf-8');
    const sse = await post({ stream: 'true', response_format: 'text' });
    expect(sse.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const data = sseEvents(await sse.text()).map((event) => event.data);
    expect(data.at(-1)).toBe('[DONE]');
    for (const payload of data.slice(0, -1)) expect(() => JSON.parse(payload)).not.toThrow();
  });

  it('writes exactly one usage row whose quantity is what the response reported', async () => {
    const account = await t.newAccount(10_000_000);
    const res = await fetch(`${t.baseUrl}/compat/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}` },
      body: (() => {
        const form = new FormData();
        form.append('file', new Blob([wavBytes(audio.samples, 16000)]), 'a.wav');
        return form;
      })(),
    });
    const body = (await res.json()) as any;
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      requestId: res.headers.get('x-request-id'),
      model: 'sunjata-1',
      unit: 'second',
      quantity: body.usage.seconds,
      costMicros: Math.ceil(body.usage.seconds * 100 - 1e-9),
    });
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(10_000_000 - rows[0]!.costMicros);
  });
});
