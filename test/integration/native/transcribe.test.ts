/**
 * The native transcribe routes (SPEC §4.7, §6) through the Djelia SDKs' exact requests, against a server
 * with the demo models whose clock is before the retirement date: segments transcribe the demo voice's
 * speech back to its words at their real times (v1 and v2, plain and NDJSON), translate_to_french gives the
 * French of the whole transcript (and in a stream, of the transcript so far), and every answer carries the
 * deprecation headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { startNativeServer } from './sdk-axios.js';
import { spokenPhrases, wavBytes } from '../../helpers/audio.js';
import { jsSdkTranscribe, jsSdkTranscribeStream, ndjsonObjects, pythonSdkTranscribe } from './transcribe-clients.js';

const PHRASES = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'ɔ ɲɔ ŋa kɛnɛ'];
// The demo translator's glossary, word by word (unknown words are copied): see translations-chat.test.ts.
const FRENCH = ['tu ni ce', 'je père ni je mère bɛ riz manger', 'ɔ ɲɔ ŋa kɛnɛ'];
const audio = spokenPhrases(PHRASES);
const wav = wavBytes(audio.samples, 16000);
/** One 20 ms model frame, plus the 5 ms of window a CTC frame spans beyond its hop. */
const FRAME = 0.025;

let t: TestServer;
let frenchOf: (bambara: string) => Promise<string>;
beforeAll(async () => {
  t = await startNativeServer();
  // The French the translation model gives for a text, asked of the primary surface.
  frenchOf = async (bambara) => {
    const res = await fetch(`${t.baseUrl}/compat/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'banjugu-1',
        messages: [{ role: 'user', content: bambara }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      }),
    });
    return ((await res.json()) as any).choices[0].message.content;
  };
}, 120_000);
afterAll(() => t.close());

function expectSegmentsOfSpeech(segments: any[]): void {
  expect(segments.map((s) => s.text)).toEqual(PHRASES);
  segments.forEach((s, i) => {
    expect(Object.keys(s).sort()).toEqual(['end', 'start', 'text']);
    expect(Math.abs(s.start - audio.spans[i]!.start)).toBeLessThanOrEqual(FRAME);
    expect(Math.abs(s.end - audio.spans[i]!.end)).toBeLessThanOrEqual(FRAME);
  });
}

for (const version of [1, 2] as const) {
  describe(`the JS SDK on v${version}`, () => {
    const options = () => ({ baseUrl: t.baseUrl, apiKey: t.apiKey, version });

    it('transcribe: an array of segments with the spoken words at their times, as JSON with the deprecation headers', async () => {
      const res = await jsSdkTranscribe(options(), wav);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers.deprecation).toMatch(/^@\d+$/);
      expect(res.headers.sunset).toBe('Sun, 20 Sep 2026 00:00:00 GMT');
      expect(res.headers.link).toBe('</compat/v1/audio/transcriptions>; rel="successor-version"');
      expectSegmentsOfSpeech(res.data);
    });

    it('transcribe with translate_to_french: one {text}, the whole transcript in French', async () => {
      const res = await jsSdkTranscribe({ ...options(), translateToFrench: true }, wav);
      expect(res.data).toEqual({ text: FRENCH.join(' ') });
      expect(res.data).toEqual({ text: await frenchOf(PHRASES.join(' ')) });
    });

    it('stream: NDJSON, one segment object per line', async () => {
      const objects: any[] = [];
      for await (const object of jsSdkTranscribeStream(options(), wav)) objects.push(object);
      expectSegmentsOfSpeech(objects);
    });

    it('stream with translate_to_french: each object the French of the transcript so far, the last the whole', async () => {
      const objects: any[] = [];
      for await (const object of jsSdkTranscribeStream({ ...options(), translateToFrench: true }, wav)) objects.push(object);
      const expected = await Promise.all(PHRASES.map((_, i) => frenchOf(PHRASES.slice(0, i + 1).join(' '))));
      expect(objects).toEqual(expected.map((text) => ({ text })));
      expect(objects.at(-1)).toEqual({ text: FRENCH.join(' ') });
    });
  });
}

describe('the wire', () => {
  it('the stream is application/x-ndjson, every line one JSON object ended by \\n', async () => {
    const res = await pythonSdkTranscribe({ baseUrl: t.baseUrl, apiKey: t.apiKey, shape: 'aiohttp', filename: 'audio_file', stream: true }, wav);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const body = await res.text();
    expect(body.endsWith('\n')).toBe(true);
    const lines = body.slice(0, -1).split('\n');
    expect(lines).toHaveLength(PHRASES.length);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ text: expect.any(String), start: expect.any(Number), end: expect.any(Number) });
  });

  it('the paths without /api serve the same', async () => {
    const form = new FormData();
    form.append('file', new Blob([wav]), 'speech.wav');
    const res = await fetch(`${t.baseUrl}/v2/models/transcribe`, { method: 'POST', headers: { 'x-api-key': t.apiKey }, body: form });
    expectSegmentsOfSpeech((await res.json()) as any[]);
    expect(res.headers.get('link')).toBe('</compat/v1/audio/transcriptions>; rel="successor-version"');
  });

  it('other multipart fields the SDKs might send are ignored', async () => {
    const form = new FormData();
    form.append('model', 'gpt-9');
    form.append('chunk_size', '1.0');
    form.append('file', new Blob([wav]), 'speech.wav');
    const res = await fetch(`${t.baseUrl}/api/v1/models/transcribe?translate_to_french=FALSE`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey },
      body: form,
    });
    expectSegmentsOfSpeech((await res.json()) as any[]);
  });
});

describe('the Python SDK request shapes', () => {
  const py = (extra: { shape: 'requests' | 'aiohttp'; filename: string; stream?: boolean; translateToFrench?: boolean; version?: 1 | 2 }) =>
    pythonSdkTranscribe({ baseUrl: t.baseUrl, apiKey: t.apiKey, ...extra }, wav);

  it('requests (files={"file": open(path)}: an untyped part named after the file), v2 and v1', async () => {
    for (const version of [2, 1] as const) {
      const res = await py({ shape: 'requests', filename: 'speech.wav', version });
      expect(res.status).toBe(200);
      expectSegmentsOfSpeech((await res.json()) as any[]);
    }
  });

  it('requests with translate_to_french=true', async () => {
    expect(await (await py({ shape: 'requests', filename: 'speech.wav', translateToFrench: true })).json()).toEqual({ text: FRENCH.join(' ') });
  });

  it('aiohttp (FormData, application/octet-stream part "audio_file"), stream read line by line', async () => {
    const res = await py({ shape: 'aiohttp', filename: 'audio_file', stream: true, translateToFrench: true });
    const objects = ndjsonObjects(await res.text());
    expect(objects.at(-1)).toEqual({ text: FRENCH.join(' ') });
  });

  it('the sync SDK\'s "stream" (it posts to the non-stream path and reads the lines): the one-line JSON array is flattened', async () => {
    const res = await py({ shape: 'requests', filename: 'speech.wav' });
    expectSegmentsOfSpeech(ndjsonObjects(await res.text()));
  });
});
