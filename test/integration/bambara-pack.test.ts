/**
 * `npm run models:pull -- --pack bambara` end to end against a stand-in Hugging Face hub on loopback that
 * serves the pack's two repositories under their real ids, paths and file names (test/fixtures/
 * bambara-standin.ts), pinned the way the real pack is pinned (its own commits and checksums, built with
 * the same bambaraPack function): a corrupted file and a file that differs from its pin are refused; an
 * interrupted download resumes from where it stopped; each licence is shown, non-commercial in plain
 * words; then a real Kuma server on the written manifest answers /audio/speech from the sherpa-layout MMS
 * file (the demo ASR hears what it says), /chat/completions from the Xenova-layout NLLB files (fp32, then
 * the `_quantized` names alone), and GET /models/{id} carries the licence.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureDemoPack } from '../../models/generator/generate-demo-pack.js';
import { runPullCommand } from '../../src/cli/pull-model.js';
import { bambaraPack, type BambaraPins } from '../../src/models-hub/bambara-pack.js';
import { startTestServer } from '../helpers/test-server.js';
import { MMS_REPO, NLLB_REPO, standInPins, writeStandInRepos } from '../fixtures/bambara-standin.js';
import { FakeHub } from './fake-hf-hub.js';

const FAST_RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };
const SPOKEN = 'n fa ni n ba bɛ malo dun';
const IN_FRENCH = 'je père ni je mère bɛ riz manger';

let hub: FakeHub;
let root: string;
let pins: BambaraPins;

beforeAll(async () => {
  await ensureDemoPack();
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-bambara-pack-'));
  const dirs = await writeStandInRepos(path.join(root, 'hub'));
  hub = await new FakeHub([
    { id: NLLB_REPO, dir: dirs.nllb },
    { id: MMS_REPO, dir: dirs.mms },
  ]).start();
  pins = standInPins(dirs, (repo) => hub.commitOf(repo));
}, 120_000);
afterAll(async () => {
  await hub.close();
  fs.rmSync(root, { recursive: true, force: true });
});
afterEach(() => {
  hub.cutOnce.clear();
  hub.corrupt.clear();
  hub.requests.length = 0;
});

/** Runs the command in a fresh (or the given) working folder with the stand-in pack in place of the built-in one. */
async function pullPack(cwd: string, args: string[] = [], packPins = pins, retry = FAST_RETRY) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPullCommand(['--pack', 'bambara', '--endpoint', hub.url, ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: {},
    cwd,
    progress: null,
    client: { retry },
    packs: { bambara: () => bambaraPack(packPins) },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const workdir = () => fs.mkdtempSync(path.join(root, 'work-'));
const installed = (cwd: string, file: string) => path.join(cwd, 'models', 'bambara', file);

describe('checksums', () => {
  it('a file altered in transit is refused (pinned sha256, and hub-listed sha256 where the pack pins none); nothing of it is left', async () => {
    for (const [file, local] of [
      ['onnx/encoder_model.onnx', 'nllb-200-distilled-600M/onnx/encoder_model.onnx'],
      ['bam/model.onnx', 'mms-tts-bam/bam/model.onnx'],
    ] as const) {
      const cwd = workdir();
      hub.corrupt.add(file);
      const { code, err } = await pullPack(cwd);
      hub.corrupt.clear();
      expect(code, file).toBe(1);
      expect(err).toMatch(new RegExp(`Error: Checksum mismatch for ${file.replace('.', '\\.')}: expected sha256 [0-9a-f]{64}, got sha256 [0-9a-f]{64}`));
      expect(fs.existsSync(installed(cwd, local)) || fs.existsSync(`${installed(cwd, local)}.partial`)).toBe(false);
      expect(fs.existsSync(installed(cwd, 'kuma-models.json'))).toBe(false);
    }
  });

  it('a repository whose listing differs from a pin is refused before any download', async () => {
    const wrong = structuredClone(pins);
    wrong.translation.files['onnx/decoder_model_merged.onnx']!.sha256 = 'f'.repeat(64);
    const { code, err } = await pullPack(workdir(), [], wrong);
    expect(code).toBe(1);
    expect(err).toContain(`Error: The hub lists onnx/decoder_model_merged.onnx of ${NLLB_REPO}@${hub.commitOf(NLLB_REPO)} with sha256`);
    expect(err).toContain(`the pack pins ${'f'.repeat(64)}`);
    expect(hub.requests.filter((r) => r.url.includes('/resolve/'))).toEqual([]);
  });
});

describe('install and serve', () => {
  const cwd = () => installedRoot;
  let installedRoot = '';

  it('an interrupted download resumes where it stopped; the licences are shown; the manifest keeps the other models', async () => {
    installedRoot = workdir();
    hub.cutOnce.set('onnx/decoder_model_merged.onnx', 60_000);
    const first = await pullPack(cwd(), [], pins, { ...FAST_RETRY, attempts: 1 });
    expect(first.code).toBe(1);
    expect(first.err).toMatch(/Error: Network failure talking to 127\.0\.0\.1:\d+.*|Error: the connection ended after/);
    const partial = `${installed(cwd(), 'nllb-200-distilled-600M/onnx/decoder_model_merged.onnx')}.partial`;
    const kept = fs.statSync(partial).size;
    expect(kept).toBeGreaterThan(0);

    hub.requests.length = 0;
    const second = await pullPack(cwd());
    expect(second.code).toBe(0);
    expect(
      hub.requests
        .filter((r) => r.server === 'storage' && r.url.includes(pins.translation.files['onnx/decoder_model_merged.onnx']!.sha256!))
        .map((r) => r.range),
    ).toEqual([`bytes=${kept}-`]);
    expect(fs.existsSync(partial)).toBe(false);
    // Files done in the first run are not fetched again.
    expect(hub.requests.some((r) => r.url.endsWith('/onnx/encoder_model.onnx'))).toBe(false);

    for (const id of ['banjugu-1', 'jifili-1'])
      expect(second.err).toMatch(
        new RegExp(`${id} ← .*\\n  Licence: Creative Commons Attribution-NonCommercial 4\\.0 International \\(CC BY-NC 4\\.0\\) \\[cc-by-nc-4\\.0\\]`),
      );
    expect(second.err.match(/NOT FOR COMMERCIAL USE\. NON-COMMERCIAL USE ONLY\./g)?.length).toBe(2);
    expect(second.err).toContain('Serve it with: KUMA_MODELS_MANIFEST=models/bambara/kuma-models.json npm start');

    const manifest = JSON.parse(fs.readFileSync(installed(cwd(), 'kuma-models.json'), 'utf8')) as { models: Array<Record<string, any>> };
    const byId = Object.fromEntries(manifest.models.map((m) => [m.id, m]));
    expect(byId['banjugu-1']).toMatchObject({
      engine: 'nllb',
      dir: 'nllb-200-distilled-600M',
      aliases: ['{vendor}-translate-v2'],
      license: { id: 'cc-by-nc-4.0', commercialUse: false },
    });
    expect(byId['banjugu-1']!.options).toBeUndefined();
    expect(byId['jifili-1']).toMatchObject({ engine: 'vits-sherpa', dir: 'mms-tts-bam/bam', license: { id: 'cc-by-nc-4.0', commercialUse: false } });
    // The shipped manifest's other models stay, their folders rebased onto the new manifest's place.
    expect(Object.keys(byId).sort()).toEqual(['banjugu-1', 'jifili-1', 'sunjata-1', 'vad', '{vendor}-asr-v1', '{vendor}-tts-v1', '{vendor}-tts-v2'].sort());
    expect(path.resolve(installed(cwd(), '.'), byId['sunjata-1']!.dir)).toBe(path.resolve('models/demo/ctc-wav2vec2'));
  }, 60_000);

  it('a Kuma server on the written manifest speaks with the MMS file and translates with the NLLB files, and shows the licences', async () => {
    // After the legacy ids' retirement date, so the list holds the three canonical models.
    const t = await startTestServer({
      clock: () => new Date('2026-10-01T00:00:00Z'),
      config: { modelsManifest: installed(cwd(), 'kuma-models.json'), demoPack: false, engineReplicasMax: 1 },
    });
    try {
      await t.server.enginesReady;
      const auth = { authorization: `Bearer ${t.apiKey}` };
      const speech = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'jifili-1', input: SPOKEN, response_format: 'wav' }),
      });
      expect(speech.status).toBe(200);
      const form = new FormData();
      form.append('file', new Blob([await speech.arrayBuffer()], { type: 'audio/wav' }), 'speech.wav');
      form.append('model', 'sunjata-1');
      form.append('response_format', 'text');
      const heard = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: auth, body: form });
      expect([heard.status, (await heard.text()).trim()]).toEqual([200, SPOKEN]);

      expect(await translate(t.baseUrl, t.apiKey)).toBe(IN_FRENCH);

      const model = (await (await fetch(`${t.baseUrl}/openai/v1/models/tts-1`, { headers: auth })).json()) as Record<string, any>;
      expect(model).toMatchObject({
        id: 'jifili-1',
        object: 'model',
        license: { id: 'cc-by-nc-4.0', commercial_use: false, url: 'https://creativecommons.org/licenses/by-nc/4.0/' },
      });
      expect(model.license.notice).toMatch(/^NON-COMMERCIAL USE ONLY/);
      const list = (await (await fetch(`${t.baseUrl}/openai/v1/models`, { headers: auth })).json()) as { data: Array<Record<string, any>> };
      const licensed = list.data.filter((m) => m.license).map((m) => m.id);
      expect(licensed.sort()).toEqual(['banjugu-1', 'jifili-1']);
      expect(list.data.find((m) => m.id === 'sunjata-1')).toEqual({ id: 'sunjata-1', object: 'model', created: expect.any(Number), owned_by: 'djelia' });
    } finally {
      await t.close();
    }
  }, 120_000);

  it('--variant quantized adds only the _quantized files, and the server translates with them alone', async () => {
    hub.requests.length = 0;
    const { code, err } = await pullPack(cwd(), ['--variant', 'quantized']);
    expect(code).toBe(0);
    const fetched = hub.requests.filter((r) => r.server === 'hub' && r.url.includes('/resolve/')).map((r) => r.url.replace(/^.*\/resolve\/[0-9a-f]+\//, ''));
    expect(fetched.sort()).toEqual(['onnx/decoder_model_merged_quantized.onnx', 'onnx/encoder_model_quantized.onnx']);
    expect(err).toContain('Not used by this variant (delete to free disk space): onnx/encoder_model.onnx, onnx/decoder_model_merged.onnx');
    const manifest = JSON.parse(fs.readFileSync(installed(cwd(), 'kuma-models.json'), 'utf8')) as { models: Array<Record<string, any>> };
    expect(manifest.models.find((m) => m.id === 'banjugu-1')!.options).toEqual({ variant: '_quantized' });

    for (const file of ['encoder_model.onnx', 'decoder_model_merged.onnx']) fs.rmSync(installed(cwd(), `nllb-200-distilled-600M/onnx/${file}`));
    const t = await startTestServer({ config: { modelsManifest: installed(cwd(), 'kuma-models.json'), demoPack: false, engineReplicasMax: 1 } });
    try {
      await t.server.enginesReady;
      expect(await translate(t.baseUrl, t.apiKey)).toBe(IN_FRENCH);
    } finally {
      await t.close();
    }
  }, 120_000);
});

async function translate(baseUrl: string, apiKey: string): Promise<string | null | undefined> {
  const client = new OpenAI({ apiKey, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
  const res = await client.chat.completions.create({
    model: 'banjugu-1',
    messages: [{ role: 'user', content: SPOKEN }],
    // @ts-expect-error the extension object is not in the SDK's types
    djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
  });
  return res.choices[0]?.message.content;
}
