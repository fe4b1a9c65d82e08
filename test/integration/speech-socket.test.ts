/**
 * The streaming speech socket with the demo models, through a real server and a `ws` client: text sent word
 * by word is spoken before the input ends, and the audio stream transcribes back to the whole text; flush
 * and end of input; every format decodes; alignment is cumulative; bad input gets an error and the socket
 * goes on; a bad query is refused on the socket; the ledger matches the characters spoken.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';
import { chunkText } from '../../src/engines/tts/text-chunker.js';
import { SpeechSocketClient } from './speech-socket-client.js';

const SENTENCES = ['i ni ce. ', 'a ka kɛnɛ wa? ', 'tɔgɔ ye musa ye.'];
const TEXT = SENTENCES.join('');
const WORDS = TEXT.split(/(?<= )/); // each word with its trailing space

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const connect = (path: string, apiKey = t.apiKey) => SpeechSocketClient.open(t.baseUrl, path, { authorization: `Bearer ${apiKey}` });

const transcribe = (samples: Float32Array, rate: number) => transcribeWith(t.server.engines!, samples, rate);

const words = (s: string) =>
  s
    .replace(/[.?,!]/g, '')
    .trim()
    .split(/\s+/)
    .join(' ');

async function usage(accountId: string) {
  return (await t.server.store.listUsage({ accountId })).map((r) => ({ model: r.model, unit: r.unit, quantity: r.quantity }));
}

describe('streaming speech socket', () => {
  it('word by word: audio of the first sentence arrives before the last word is sent, and the stream transcribes to the whole text', async () => {
    const account = await t.newAccount(10_000_000);
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm', account.apiKey);
    client.send({ text: ' ' }); // the ElevenLabs opening message
    for (const w of WORDS.slice(0, 4)) client.send({ text: w }); // "i ni ce. a": the first sentence is certain
    const first = await client.waitFor((m) => typeof m.audio === 'string', 'the first audio');
    expect(first.sentBefore).toBeLessThan(WORDS.length + 1);
    for (const w of WORDS.slice(4)) client.send({ text: w });
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true, 'isFinal');
    expect((await client.closed).code).toBe(1000);
    // isFinal comes after the last audio, and nothing after it.
    expect(client.received.at(-1)!.json).toEqual({ isFinal: true });
    expect(client.audioMessages.every((m) => m.isFinal === null)).toBe(true);
    const { samples, rate } = await decodeSpeech('pcm', client.audio());
    expect(await transcribe(samples, rate)).toBe(words(TEXT));
    // The ElevenLabs opening " " is not input: exactly the text's characters are charged, one row per phrase.
    const rows = await usage(account.accountId);
    expect(rows.every((r) => r.model === 'jifili-1' && r.unit === 'character')).toBe(true);
    expect(rows.reduce((sum, r) => sum + r.quantity, 0)).toBe([...TEXT].length);
    expect(rows).toHaveLength(client.audioMessages.filter((m) => m.alignment).length);
  });

  it('each phrase is charged as it is delivered: its usage row exists while the socket is still open', async () => {
    const account = await t.newAccount(10_000_000);
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm', account.apiKey);
    const phraseStarts = () => client.audioMessages.filter((m) => m.alignment);
    client.send({ text: TEXT, flush: true }); // spoken now; the input does not end
    for (let n = 2; n <= 3; n++) {
      // Phrase n's first audio goes out only after phrase n − 1 was delivered and charged.
      await client.waitFor(() => phraseStarts().length >= n, `phrase ${n}`);
      const charged = (await usage(account.accountId)).map((r) => r.quantity);
      expect(charged.length).toBeGreaterThanOrEqual(n - 1);
      // Here each sentence is a phrase: the rows so far are the sentences heard so far.
      expect(
        phraseStarts()
          .map((m) => m.alignment.chars.join('').trim())
          .slice(0, n),
      ).toEqual(SENTENCES.slice(0, n).map((s) => s.trim()));
      expect(charged.slice(0, n - 1)).toEqual(SENTENCES.slice(0, n - 1).map((s) => [...s].length));
    }
    // The last phrase too, with the socket still open (no {"text": ""} sent, no isFinal).
    for (let i = 0; i < 250 && (await usage(account.accountId)).length < phraseStarts().length; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await usage(account.accountId)).reduce((sum, r) => sum + r.quantity, 0)).toBe([...TEXT].length);
    expect(client.ws.readyState).toBe(client.ws.OPEN);
    expect(client.received.some((r) => r.json.isFinal === true)).toBe(false);
    client.send({ text: '' });
    expect((await client.closed).code).toBe(1000);
    // Ending adds nothing: every phrase was charged already.
    expect((await usage(account.accountId)).reduce((sum, r) => sum + r.quantity, 0)).toBe([...TEXT].length);
  });

  it('alignment covers the text phrase by phrase on one cumulative clock', async () => {
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm');
    client.send({ text: TEXT });
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true);
    const alignment = client.alignment('alignment');
    expect(alignment.chars.join('')).toBe(
      chunkText(TEXT)
        .map((c) => `${c.text} `)
        .join(''),
    );
    const starts = alignment.charStartTimesMs;
    expect(starts[0]).toBe(0);
    for (let i = 1; i < starts.length; i++) expect(starts[i]).toBe(starts[i - 1]! + alignment.charDurationsMs[i - 1]!);
    const normalized = client.alignment('normalizedAlignment');
    expect(normalized.chars.join('').trim()).toBe(words(TEXT));
    // The clock ends with the audio: the last character ends within the stream's duration.
    const seconds = client.audio().length / 2 / 24000;
    expect(starts.at(-1)! + alignment.charDurationsMs.at(-1)!).toBeLessThanOrEqual(Math.ceil(seconds * 1000));
  });

  it('flush speaks what is pending without ending the input; the next text is spoken after it', async () => {
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm');
    client.send({ text: 'i ni ce' }); // no boundary: nothing is certain yet
    client.send({ flush: true });
    await client.waitFor((m) => m.alignment?.chars.join('') === 'i ni ce ', 'the flushed phrase');
    const before = client.received.length;
    client.send({ text: 'a ka kɛnɛ', flush: true });
    await client.waitFor((m) => m.alignment?.chars.join('') === 'a ka kɛnɛ ', 'the second flushed phrase');
    expect(client.received.length).toBeGreaterThan(before);
    expect(client.received.some((r) => r.json.isFinal)).toBe(false);
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true);
    const { samples, rate } = await decodeSpeech('pcm', client.audio());
    expect(await transcribe(samples, rate)).toBe('i ni ce a ka kɛnɛ');
  });

  it('the ElevenLabs path, with xi-api-key and ElevenLabs format names', async () => {
    const client = await SpeechSocketClient.open(t.baseUrl, '/openai/v1/text-to-speech/moussa/stream-input?model_id=jifili-1&output_format=pcm_16000', {
      'xi-api-key': t.apiKey,
    });
    client.send({ text: ' ', voice_settings: { stability: 0.5 }, generation_config: { chunk_length_schedule: [120, 160] }, xi_api_key: t.apiKey });
    client.send({ text: 'i ni ce ', try_trigger_generation: true });
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true);
    const { samples, rate } = await decodeSpeech('l16_16000', client.audio());
    expect(await transcribe(samples, rate)).toBe('i ni ce');
  });

  const FORMATS = [
    'pcm',
    'wav',
    'mp3',
    'opus',
    'ulaw',
    'alaw',
    'l16_8000',
    'l16_16000',
    'fmp4',
    'ulaw_8000',
    'mp3_44100_128',
    'opus_48000_64',
    'pcm_22050',
    'pcm_44100',
    'mp3_22050_32',
  ];
  it.each(FORMATS)('%s: the concatenated audio decodes, to the text where the rate carries the voice', async (format) => {
    const client = await connect(`/openai/v1/audio/speech/stream?output_format=${format}`);
    for (const s of SENTENCES) client.send({ text: s, flush: true });
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true);
    const kuma = { ulaw_8000: 'ulaw', mp3_44100_128: 'mp3', mp3_22050_32: 'mp3', opus_48000_64: 'opus' }[format] ?? format;
    const { samples, rate, sourceRate } = await decodeSpeech(kuma, client.audio());
    // An ElevenLabs rate is the rate of the audio, resampled from the voice's.
    const named = /^(?:pcm|mp3)_(\d+)/.exec(format)?.[1];
    if (named) expect(sourceRate).toBe(Number(named));
    expect(samples.length / rate).toBeGreaterThan(1);
    if (rate >= 16000) expect(await transcribe(samples, rate)).toBe(words(TEXT));
  });
});

describe('bad input', () => {
  it('non-JSON, wrong types, a missing text, unspeakable text and binary frames get errors; the socket goes on', async () => {
    const account = await t.newAccount(10_000_000);
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm', account.apiKey);
    client.send('not json');
    client.send({ text: 42 });
    client.send({ flush: 'yes' });
    client.send({ voice_settings: 'loud' });
    client.send({ try_trigger_generation: true });
    client.send({ text: 'i ni ce 😀 ' });
    client.ws.send(Buffer.from([1, 2, 3]));
    client.send({ text: 'a ka kɛnɛ' });
    client.send({ text: '' });
    await client.waitFor((m) => m.isFinal === true);
    expect((await client.closed).code).toBe(1000);
    expect(client.errors.map((e) => [e.error, e.param, e.code])).toEqual([
      ['invalid_json', null, null],
      ['invalid_value', 'text', null],
      ['invalid_value', 'flush', null],
      ['invalid_value', 'voice_settings', null],
      ['missing_required_parameter', 'text', null],
      ['invalid_value', 'text', null],
      ['invalid_value', null, null],
    ]);
    expect(client.errors[5].message).toContain('U+1F600');
    for (const e of client.errors) expect(e.type).toBe('invalid_request_error');
    const { samples, rate } = await decodeSpeech('pcm', client.audio());
    expect(await transcribe(samples, rate)).toBe('a ka kɛnɛ');
    // Only what was spoken is charged: the refused piece is not.
    expect(await usage(account.accountId)).toEqual([{ model: 'jifili-1', unit: 'character', quantity: [...'a ka kɛnɛ'].length }]);
  });

  it.each([
    // A name that is no format is 400 invalid_value; a known format jifili-1 does not serve is 422
    // invalid_request (as on REST), both naming the parameter the client used.
    ['output_format=pcm_96000', 'invalid_value', 'output_format'],
    ['output_format=mp3_44100_8', 'invalid_value', 'output_format'],
    ['output_format=flac', 'invalid_request', 'output_format'],
    ['response_format=flac', 'invalid_request', 'response_format'],
    ['response_format=nonsense', 'invalid_value', 'response_format'],
    ['voice=sekou', 'unsupported_voice', 'voice'],
    ['model=sunjata-1', 'invalid_value', 'model'],
    ['model=gpt-9', 'model_not_found', 'model'],
  ])('a bad query (%s) is refused on the socket: error, then close 1008', async (query, code, param) => {
    const client = await connect(`/openai/v1/audio/speech/stream?${query}`);
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.map((e) => [e.error, e.param, e.code])).toEqual([[code, param, 1008]]);
  });

  it('no key is a 401 on the upgrade; plain HTTP is 426', async () => {
    const noKey = await fetch(`${t.baseUrl}/openai/v1/audio/speech/stream`);
    expect(noKey.status).toBe(401);
    const plain = await fetch(`${t.baseUrl}/openai/v1/audio/speech/stream`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(plain.status).toBe(426);
  });

  it('an inactive socket is closed 1008 with input_timeout_exceeded', async () => {
    const client = await connect('/openai/v1/audio/speech/stream?output_format=pcm&inactivity_timeout=1');
    client.send({ text: 'i ni ce' });
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.map((e) => e.error)).toEqual(['input_timeout_exceeded']);
  });
});
