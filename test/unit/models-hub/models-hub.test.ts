/**
 * The offline pieces of `npm run models:pull`: the engine guessed for every demo-pack layout (and for
 * Whisper, quantised-only, MMS multi-language and unknown folders), the manifest writer (add, replace
 * keeping aliases, refuse an alias clash, one entry per line), huggingface-cli style patterns, and the
 * terminal progress line staying within the terminal's width.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_DEMO_DIR, ensureDemoPack } from '../../../models/generator/generate-demo-pack.js';
import { loadManifest, ManifestSchema } from '../../../src/engines/manifest.js';
import { guessEngine, GuessError } from '../../../src/models-hub/guess-engine.js';
import { formatManifest, upsertManifestEntry } from '../../../src/models-hub/manifest-writer.js';
import { PullProgress } from '../../../src/models-hub/progress.js';
import { globToRegExp, selectFiles } from '../../../src/models-hub/pull.js';

let tmp: string;
beforeAll(() => ensureDemoPack(), 120_000);
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-hub-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

function folder(files: Record<string, string | object>): string {
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tmp, name)), { recursive: true });
    fs.writeFileSync(path.join(tmp, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return tmp;
}

describe('guessing the engine', () => {
  it.each([
    ['ctc-wav2vec2', 'ctc-wav2vec2'],
    ['ctc-nemo', 'ctc-nemo'],
    ['vits-hf', 'vits-hf'],
    ['vits-sherpa', 'vits-sherpa'],
    ['vits-piper', 'vits-piper'],
    ['nllb', 'nllb'],
    ['whisper', 'whisper'],
  ])('the demo %s folder is served by %s, with no extra options', (dir, engine) => {
    const guess = guessEngine(path.join(DEFAULT_DEMO_DIR, dir));
    expect(guess.engine).toBe(engine);
    expect(guess.options).toEqual({});
  });

  it('a Whisper export with only quantised files gets that variant, and the other variants are noted', () => {
    const guess = guessEngine(
      folder({
        'config.json': { model_type: 'whisper' },
        'onnx/encoder_model_quantized.onnx': '',
        'onnx/encoder_model_fp16.onnx': '',
        'onnx/decoder_model_merged_quantized.onnx': '',
      }),
    );
    expect(guess).toMatchObject({ engine: 'whisper', options: { variant: '_fp16' } });
    expect(guess.notes.join()).toContain('"_quantized"');
  });

  it('a plain optimum-cli output (ONNX files at the top) is guessed, with a note to move them into onnx/', () => {
    const guess = guessEngine(folder({ 'config.json': { model_type: 'm2m_100' }, 'encoder_model.onnx': '', 'decoder_model_merged.onnx': '' }));
    expect(guess.engine).toBe('nllb');
    expect(guess.notes.join()).toMatch(/mkdir -p onnx && mv \*\.onnx\* onnx\//);
  });

  it('an MMS folder with one vocabulary per language picks bam', () => {
    const guess = guessEngine(
      folder({ 'config.json': { model_type: 'wav2vec2' }, 'model.onnx': '', 'vocab.json': { bam: { a: 0 }, fra: { a: 0 } }, 'tokenizer_config.json': {} }),
    );
    expect(guess).toMatchObject({ engine: 'ctc-wav2vec2', options: { language: 'bam' } });
  });

  it('a Piper voice with its own file name sets options.model', () => {
    const piper = fs.readFileSync(path.join(DEFAULT_DEMO_DIR, 'vits-piper', 'model.onnx.json'), 'utf8');
    expect(guessEngine(folder({ 'bm_ML-demo-medium.onnx': '', 'bm_ML-demo-medium.onnx.json': piper })).options).toEqual({ model: 'bm_ML-demo-medium.onnx' });
  });

  it('a sherpa-onnx export named after the voice, with its int8 copy beside it, picks the full-precision file', () => {
    const sherpa = fs.readFileSync(path.join(DEFAULT_DEMO_DIR, 'vits-sherpa', 'model.onnx'));
    const dir = folder({ 'tokens.txt': fs.readFileSync(path.join(DEFAULT_DEMO_DIR, 'vits-sherpa', 'tokens.txt'), 'utf8'), 'vits-bam.int8.onnx': '' });
    fs.writeFileSync(path.join(dir, 'vits-bam.onnx'), sherpa);
    expect(guessEngine(dir)).toMatchObject({ engine: 'vits-sherpa', options: { model: 'vits-bam.onnx' } });
  });

  it('an unknown folder is a GuessError that lists the files and suggests --engine', () => {
    expect(() => guessEngine(folder({ 'weights.safetensors': '', 'config.json': { model_type: 'llama' } }))).toThrow(GuessError);
    expect(() => guessEngine(tmp)).toThrow(/model_type llama.*weights\.safetensors.*Pass --engine/);
  });
});

describe('writing the manifest', () => {
  it('adds to a new file, then replaces the same id keeping its aliases and limits, one entry per line', () => {
    const file = path.join(tmp, 'models', 'manifest.json');
    fs.mkdirSync(path.join(tmp, 'models', 'a'), { recursive: true });
    fs.mkdirSync(path.join(tmp, 'models', 'b'), { recursive: true });
    expect(upsertManifestEntry(file, { id: 'sunjata-1', engine: 'ctc-wav2vec2', absoluteDir: path.join(tmp, 'models', 'a'), options: {} }).replaced).toBe(
      false,
    );
    const edited = JSON.parse(fs.readFileSync(file, 'utf8'));
    edited.models[0] = { ...edited.models[0], aliases: ['{vendor}-asr-v3'], maxQueue: 32, options: { old: true } };
    fs.writeFileSync(file, formatManifest(edited.models));
    const { replaced, text } = upsertManifestEntry(file, {
      id: 'sunjata-1',
      engine: 'whisper',
      absoluteDir: path.join(tmp, 'models', 'b'),
      options: { variant: '_fp16' },
    });
    expect(replaced).toBe(true);
    expect(text).toBe(
      '{\n  "models": [\n    { "id": "sunjata-1", "aliases": ["{vendor}-asr-v3"], "maxQueue": 32, "engine": "whisper", "dir": "b", "options": { "variant": "_fp16" } }\n  ]\n}\n',
    );
    expect(loadManifest(file).entries[0]).toMatchObject({
      id: 'sunjata-1',
      aliases: ['djelia-asr-v3'],
      engine: 'whisper',
      absoluteDir: path.join(tmp, 'models', 'b'),
    });
  });

  it("refuses an id that is another entry's alias, leaving the file as it was", () => {
    const file = path.join(tmp, 'manifest.json');
    const before = formatManifest([{ id: 'banjugu-1', aliases: ['{vendor}-translate-v2'], engine: 'nllb', dir: '.' }]);
    fs.writeFileSync(file, before);
    expect(() => upsertManifestEntry(file, { id: 'djelia-translate-v2', engine: 'nllb', absoluteDir: tmp, options: {} })).toThrow(/alias of banjugu-1/);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });
});

describe('the example manifests', () => {
  const examples = path.resolve(DEFAULT_DEMO_DIR, '..', 'examples');
  it('one valid manifest per engine family, each written in the one-entry-per-line layout', () => {
    const engines = fs
      .readdirSync(examples)
      .filter((f) => f.endsWith('.json'))
      .map((f) => {
        const text = fs.readFileSync(path.join(examples, f), 'utf8');
        const parsed = ManifestSchema.parse(JSON.parse(text));
        expect(formatManifest(JSON.parse(text).models, { comment: JSON.parse(text).comment }), f).toBe(text);
        expect(parsed.models.map((m) => m.engine)).toEqual([f.replace('.json', '')]);
        return f.replace('.json', '');
      });
    expect(engines.sort()).toEqual(['ctc-nemo', 'ctc-wav2vec2', 'nllb', 'vits-hf', 'vits-piper', 'vits-sherpa', 'whisper']);
  });
});

describe('file patterns', () => {
  const files = ['config.json', 'onnx/encoder_model.onnx', 'onnx/encoder_model_fp16.onnx', 'onnx/decoder_model_merged.onnx', 'README.md', '.gitattributes'].map(
    (p) => ({ path: p, size: 1 }),
  );
  it('* crosses folders, a trailing / means the whole folder, [] classes work, .gitattributes is never fetched', () => {
    expect(selectFiles(files).map((f) => f.path)).not.toContain('.gitattributes');
    expect(selectFiles(files, ['*.onnx'], ['*_fp16*']).map((f) => f.path)).toEqual(['onnx/encoder_model.onnx', 'onnx/decoder_model_merged.onnx']);
    expect(selectFiles(files, ['onnx/']).length).toBe(3);
    expect(globToRegExp('[!R]*.md').test('README.md')).toBe(false);
    expect(globToRegExp('conf?g.json').test('config.json')).toBe(true);
  });
});

describe('progress', () => {
  it('on a terminal, redraws one line that fits its width; elsewhere, writes plain lines', () => {
    let clock = 0;
    const tty: string[] = [];
    const bar = new PullProgress({ write: (t: string) => tty.push(t), isTTY: true, columns: 60 }, 2_000_000, 1, () => clock);
    bar.beginFile('onnx/a-very-long-folder-name/decoder_model_merged_quantized.onnx', 2_000_000);
    for (let i = 0; i < 20; i++) ((clock += 200), bar.advance(100_000));
    bar.endFile('downloaded');
    const frames = tty.filter((t) => t.startsWith('\r') && t.length > 4).map((t) => t.slice(1).replace('\x1b[K', ''));
    expect(frames.at(-1)).toMatch(/^100% .*2\.00 MB\/2\.00 MB 500 kB\/s ETA 0s \[1\/1\] …/);
    for (const f of frames) expect(f.length).toBeLessThanOrEqual(59);

    const plain: string[] = [];
    const lines = new PullProgress({ write: (t: string) => plain.push(t) }, 2_000_000, 1, () => clock);
    lines.beginFile('model.onnx', 2_000_000);
    for (let i = 0; i < 20; i++) ((clock += 1000), lines.advance(100_000));
    lines.endFile('downloaded');
    expect(plain.join('')).toMatch(/^\[1\/1\] model\.onnx \(2\.00 MB\)\n {2}25% 500 kB of 2\.00 MB, 100 kB\/s\n[\s\S]*\n {2}downloaded\n$/);
  });
});
