/**
 * The NLLB runner on the demo translators (merged decoder with BPE and with Unigram tokenizers, and the
 * older decoder + decoder-with-past pair declaring cache_position): exact translations in all six
 * directions, batching, greedy and beam search, sentence splitting, caches, load-time validation.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createNllbRunner, type TranslateOutput } from '../../../../src/engines/mt/nllb-runner.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { UnknownMethodError } from '../../../../src/engines/runner.js';
import { TextTokenizer } from '../../../../src/engines/text/tokenizer.js';
import { joinSentences, splitSentences } from '../../../../src/engines/mt/sentence-splitter.js';
import { ModelEngine } from '../../../../src/engines/runtime/model-engine.js';
import { ModelEntrySchema } from '../../../../src/engines/manifest.js';
import { DEMO_GLOSSARY, generateNllbModel } from '../../../../models/generator/demo-nllb.js';

const MODELS = ['nllb', 'nllb-unigram', 'nllb-split'] as const;
const CODES = { bam: 'bam_Latn', fra: 'fra_Latn', eng: 'eng_Latn' } as const;
type Lang = keyof typeof CODES;
const LANGS = Object.keys(CODES) as Lang[];
/** onnxruntime's session class (typed as a factory); tests spy on its `run`, which every runner call goes through. */
type Run = (this: unknown, feeds: ort.InferenceSession.FeedsType) => Promise<ort.InferenceSession.ReturnType>;
const SESSION = (ort.InferenceSession as unknown as { prototype: { run: Run } }).prototype;

/** One sentence per source language and its word-by-word translations (unknown words copied). */
const SENTENCES: Record<Lang, Record<Lang, string>> = {
  bam: { bam: 'bi, n fa ni n ba bɛ malo dun.', fra: "aujourd'hui, je père ni je mère bɛ riz manger.", eng: 'today, I father ni I mother bɛ rice eat.' },
  fra: {
    fra: 'demain nous voir trois vaches et deux chiens.',
    bam: 'sini an ye saba vaches et fila chiens.',
    eng: 'tomorrow we see three vaches et two chiens.',
  },
  eng: { eng: 'my mother and my father drink water!', fra: 'my mère and my père boire eau!', bam: 'my ba and my fa min ji!' },
};

let root: string;
const runners = new Map<string, Runner>();
const ctx: RunnerContext = { signal: new AbortController().signal, checkpoint: async () => {} };

async function load(dir: string, options: Record<string, unknown> = {}): Promise<Runner> {
  return createNllbRunner({ entry: ModelEntrySchema.parse({ id: 'banjugu-1', engine: 'nllb', dir, options }), dir, intraOpThreads: 1, interOpThreads: 1 });
}

async function translate(runner: Runner, texts: string[], source: string, target: string, extra: Record<string, unknown> = {}): Promise<TranslateOutput> {
  return (await runner.call('translate', { texts, source, target, ...extra }, ctx)) as TranslateOutput;
}

/** A copy of a generated model directory to break on purpose. */
function copyModel(name: string): string {
  const dir = fs.mkdtempSync(path.join(root, `${name}-copy-`));
  fs.cpSync(path.join(root, name), dir, { recursive: true });
  return dir;
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-nllb-'));
  await generateNllbModel(root, { tokenizer: 'bpe' });
  await generateNllbModel(root, { tokenizer: 'unigram' });
  await generateNllbModel(root, { tokenizer: 'bpe', layout: 'split', cachePosition: true, name: 'nllb-split' });
  for (const name of MODELS) {
    const runner = await load(path.join(root, name));
    await runner.warmup();
    runners.set(name, runner);
  }
});

afterAll(async () => {
  await Promise.all([...runners.values()].map((r) => r.close()));
  fs.rmSync(root, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(MODELS)('the NLLB runner on the %s demo model', (name) => {
  const runner = () => runners.get(name)!;

  it.each(LANGS.flatMap((s) => LANGS.filter((t) => t !== s).map((t) => [s, t] as const)))(
    'translates %s → %s exactly, greedy and beam 4',
    async (source, target) => {
      for (const beams of [1, 4]) {
        const out = await translate(runner(), [SENTENCES[source][source]], CODES[source], CODES[target], { beams });
        expect(out.translations).toEqual([SENTENCES[source][target]]);
      }
    },
  );

  it('translates every glossary word in every direction', async () => {
    for (const source of LANGS)
      for (const target of LANGS) {
        if (source === target) continue;
        // The first entry of a word gives its translation (English "you" has two: tu/vous, i/aw).
        const first = new Map<string, string>();
        for (const entry of DEMO_GLOSSARY) if (!first.has(entry[source])) first.set(entry[source], entry[target]);
        const out = await translate(runner(), [[...first.keys()].join(' ')], source, target);
        expect(out.translations[0]).toBe([...first.values()].join(' '));
      }
  });

  it('gives the same translations batched as one by one, and counts tokens', async () => {
    const texts = [SENTENCES.eng.eng, 'you', 'one two three four five six seven eight nine ten', '', 'water'];
    const batched = await translate(runner(), texts, 'en', 'fr');
    const single = await Promise.all(texts.map((t) => translate(runner(), [t], 'en', 'fr')));
    expect(batched.translations).toEqual(single.map((s) => s.translations[0]));
    expect(batched.translations).toEqual(['my mère and my père boire eau!', 'tu', 'un deux trois quatre cinq six sept huit neuf dix', '', 'eau']);
    expect(batched.inputTokens).toBe(single.reduce((n, s) => n + s.inputTokens, 0));
    expect(batched.outputTokens).toBe(single.reduce((n, s) => n + s.outputTokens, 0));
    expect(single[4]!.inputTokens).toBe(3); // eng_Latn ▁water </s>
    expect(single[4]!.outputTokens).toBe(2); // ▁eau </s>
  });

  it('finds the better reading of an ambiguous word with beam search, where greedy takes the first', async () => {
    expect((await translate(runner(), ['you eat rice', 'you'], 'eng_Latn', 'fra_Latn')).translations).toEqual(['tu manger riz', 'tu']);
    expect((await translate(runner(), ['you eat rice', 'you'], 'eng_Latn', 'fra_Latn', { beams: 4 })).translations).toEqual(['vous manger riz', 'vous']);
    expect((await translate(runner(), ['you eat rice'], 'eng_Latn', 'bam_Latn', { beams: 4 })).translations).toEqual(['aw dun malo']);
    expect((await translate(runner(), ['you eat rice'], 'eng_Latn', 'bam_Latn', { beams: 2 })).translations).toEqual(['aw dun malo']);
  });

  it('copies words it does not know, including words that start like a glossary word', async () => {
    const out = await translate(runner(), ["Bamako jix nafolo l'eau ji", 'jirikɔrɔ 2024 ɛ\u0300 kɔ\u0301'], 'bam', 'fra');
    expect(out.translations).toEqual(["Bamako jix nafolo l'eau eau", 'jirikɔrɔ 2024 ɛ\u0300 kɔ\u0301']);
  });
});

describe('the NLLB runner on long input', () => {
  it('splits each text into sentences, translates them as one batch and re-joins them with the original breaks', async () => {
    const runner = runners.get('nllb')!;
    const text = 'n bɛ ji min. i bɛ malo dun!\n\nan bɛ taa sini? a bɛ na kunu.\nu bɛ kuma';
    const run = vi.spyOn(SESSION, 'run');
    const out = await translate(runner, [text, 'ji.'], 'bam', 'eng');
    expect(out.translations).toEqual(['I bɛ water drink. you bɛ rice eat!\n\nwe bɛ go tomorrow? he bɛ come yesterday.\nthey bɛ speak', 'water.']);
    const encoderBatch = (run.mock.calls[0]![0] as Record<string, ort.Tensor>).input_ids!.dims[0];
    expect(encoderBatch).toBe(6); // five sentences and one short text, one encoder run
    const tokenizer = TextTokenizer.fromDirectory(path.join(root, 'nllb'));
    const sentences = ['n bɛ ji min.', 'i bɛ malo dun!', 'an bɛ taa sini?', 'a bɛ na kunu.', 'u bɛ kuma', 'ji.'];
    expect(out.inputTokens).toBe(sentences.reduce((n, s) => n + tokenizer.encode(s).length + 2, 0));
  });

  it('runs at most maxBatchSentences sentences per batch, with the same result', async () => {
    const runner = await load(path.join(root, 'nllb'), { maxBatchSentences: 2 });
    const run = vi.spyOn(SESSION, 'run');
    const out = await translate(runner, ['n bɛ ji min. i bɛ malo dun! an bɛ taa sini?', 'ji.', 'tan'], 'bam', 'eng');
    expect(out.translations).toEqual(['I bɛ water drink. you bɛ rice eat! we bɛ go tomorrow?', 'water.', 'ten']);
    const encoderBatches = run.mock.calls
      .map((c) => c[0] as Record<string, ort.Tensor>)
      .filter((f) => 'attention_mask' in f)
      .map((f) => f.input_ids!.dims[0]);
    expect(encoderBatches).toEqual([2, 2, 1]);
    await runner.close();
  });

  it('cuts a sentence longer than maxSentenceChars at a space', async () => {
    const runner = await load(path.join(root, 'nllb'), { maxSentenceChars: 40 });
    const words = Array.from({ length: 30 }, (_, i) => DEMO_GLOSSARY[i]!.bam);
    const out = await translate(runner, [words.join(' ')], 'bam', 'fra');
    expect(out.translations[0]).toBe(Array.from({ length: 30 }, (_, i) => DEMO_GLOSSARY[i]!.fra).join(' '));
    const pieces = splitSentences(words.join(' '), { maxChars: 40 });
    expect(pieces.length).toBeGreaterThan(2);
    expect(Math.max(...pieces.map((p) => p.text.length))).toBeLessThanOrEqual(40);
    expect(out.inputTokens).toBe(30 + 2 * pieces.length); // one token per glossary word; a language code and </s> per piece
    await runner.close();
  });

  it('stops at maxLength', async () => {
    const out = await translate(runners.get('nllb')!, ['kelen fila saba naani'], 'bam', 'eng', { maxLength: 5 });
    expect(out.translations).toEqual(['one two three']);
    expect(out.outputTokens).toBe(3);
  });
});

describe('the output-length bound ⌈maxLengthA × source tokens⌉ + maxLengthB', () => {
  it('cuts each sentence of a batch at its own bound, greedy and beam 4; the default bound leaves the demo exact', async () => {
    const dir = path.join(root, 'nllb');
    const bounded = await load(dir, { maxLengthA: 0.5, maxLengthB: 0 });
    try {
      for (const beams of [1, 4]) {
        const texts = ['kelen fila saba naani duuru wɔɔrɔ', 'kelen fila'];
        const out = await translate(bounded, texts, 'bam', 'eng', { beams });
        // Batched together, each sentence stops at its own bound: the same as each alone, ⌈0.5 × its source⌉.
        for (const [i, text] of texts.entries()) {
          const alone = await translate(bounded, [text], 'bam', 'eng', { beams });
          const free = await translate(runners.get('nllb')!, [text], 'bam', 'eng', { beams });
          expect(alone.outputTokens).toBe(Math.min(free.outputTokens, Math.ceil(0.5 * free.inputTokens)));
          expect(out.translations[i]).toBe(alone.translations[0]);
        }
        expect(out.translations[0]!.split(' ').length).toBeLessThan(6);
      }
    } finally {
      await bounded.close();
    }
    const free = await translate(runners.get('nllb')!, ['kelen fila saba naani duuru wɔɔrɔ'], 'bam', 'eng');
    expect(free.translations).toEqual(['one two three four five six']);
  });
});

describe('the demo model depends on the runner feeding its caches back', () => {
  /** Runs translate while rewriting the feeds of every cached decoder step. */
  async function withRewrittenCache(
    rewrite: (
      feeds: Record<string, ort.Tensor>,
      previous: ort.InferenceSession.ReturnType | null,
      firstCached: Record<string, ort.Tensor> | null,
    ) => Record<string, ort.Tensor>,
  ) {
    const original = SESSION.run;
    let previous: ort.InferenceSession.ReturnType | null = null;
    let firstCached: Record<string, ort.Tensor> | null = null;
    vi.spyOn(SESSION, 'run').mockImplementation(async function (this: unknown, feeds: ort.InferenceSession.FeedsType) {
      let f = feeds as Record<string, ort.Tensor>;
      const cachedStep = (f['past_key_values.0.decoder.key']?.dims[2] ?? 0) > 0;
      if (cachedStep) {
        firstCached ??= { ...f };
        f = rewrite({ ...f }, previous, firstCached);
      }
      previous = await original.call(this, f);
      return previous;
    });
    return translate(runners.get('nllb')!, ['kelen fila saba naani duuru'], 'bam', 'fra', { maxLength: 12 });
  }

  it('gives the right output when the feeds pass through unchanged', async () => {
    expect((await withRewrittenCache((f) => f)).translations).toEqual(['un deux trois quatre cinq']);
  });

  it('gives wrong output when the decoder presents are not fed back', async () => {
    const out = await withRewrittenCache((f, _previous, first) => {
      for (const name of Object.keys(f)) if (name.includes('.decoder.')) f[name] = first![name]!;
      return f;
    });
    expect(out.translations).not.toEqual(['un deux trois quatre cinq']);
  });

  it('fails or gives wrong output when the empty encoder presents of a cached step are fed back', async () => {
    const result = await withRewrittenCache((f, previous) => {
      for (const name of Object.keys(f)) if (name.includes('.encoder.')) f[name] = previous![name.replace('past_key_values', 'present')] ?? f[name]!;
      return f;
    }).catch((err: Error) => err);
    if (!(result instanceof Error)) expect(result.translations).not.toEqual(['un deux trois quatre cinq']);
  });
});

describe('the NLLB runner at load and call time', () => {
  it.each([
    ['onnx/encoder_model.onnx', /missing .*encoder_model\.onnx/],
    ['onnx/decoder_model_merged.onnx', /missing .*decoder_model\.onnx.*decoder_with_past_model\.onnx/],
    ['config.json', /missing config\.json/],
    ['tokenizer.json', /tokenizer\.json/],
  ])('names the missing file when %s is absent', async (file, message) => {
    const dir = copyModel('nllb');
    fs.rmSync(path.join(dir, file));
    await expect(load(dir)).rejects.toThrow(message);
  });

  it('names the missing inputs when config.json has more layers than the decoder', async () => {
    const dir = copyModel('nllb');
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...config, decoder_layers: 3 }));
    await expect(load(dir)).rejects.toThrow(/decoder_model_merged\.onnx does not have the expected signature: missing inputs past_key_values\.2\.decoder\.key/);
  });

  it('names the mismatch when config.json disagrees with the cache shape', async () => {
    const dir = copyModel('nllb');
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...config, d_model: 16 }));
    await expect(load(dir)).rejects.toThrow(/past_key_values are \[batch, 2, past, 4\], config.json says 2 heads of 8/);
  });

  it('rejects a decoder file with the wrong signature', async () => {
    const dir = copyModel('nllb');
    fs.copyFileSync(path.join(dir, 'onnx/encoder_model.onnx'), path.join(dir, 'onnx/decoder_model_merged.onnx'));
    await expect(load(dir)).rejects.toThrow(/missing inputs encoder_attention_mask/);
  });

  it('rejects an unknown language and an unknown method with clear errors', async () => {
    const runner = runners.get('nllb')!;
    await expect(translate(runner, ['ji'], 'bam', 'deu_Latn')).rejects.toThrow(
      /target language deu_Latn is not in this model \(it knows bam_Latn, eng_Latn, fra_Latn\)/,
    );
    expect(() => runner.call('transcribe', {}, ctx)).toThrow(UnknownMethodError);
  });

  it('takes short language codes through the alias table even where the vocabulary has a piece spelt alike', async () => {
    // A real NLLB vocabulary holds pieces such as "fr", "en" and "bm"; the runner used to take them as the language.
    const dir = copyModel('nllb');
    const file = path.join(dir, 'tokenizer.json');
    const json = JSON.parse(fs.readFileSync(file, 'utf8'));
    const size = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).vocab_size as number;
    ['fr', 'en', 'bm'].forEach((piece, i) => (json.model.vocab[piece] = size + i));
    fs.writeFileSync(file, JSON.stringify(json));
    const runner = await load(dir);
    try {
      const text = SENTENCES.bam.bam;
      expect((await translate(runner, [text], 'bm', 'fr')).translations).toEqual([SENTENCES.bam.fra]);
      expect((await translate(runner, [SENTENCES.eng.eng], 'en', 'bm')).translations).toEqual([SENTENCES.eng.bam]);
      await expect(translate(runner, [text], 'bm', '▁ji')).rejects.toThrow(/target language ▁ji is not in this model/);
    } finally {
      await runner.close();
    }
  });

  it('drops a cancelled job from its batch at the next step; the job beside it completes as it would alone', async () => {
    const runner = await load(path.join(root, 'nllb'), { batchLanes: 1 });
    try {
      const alone = await translate(runner, [SENTENCES.bam.bam], 'bam', 'fra');
      const controller = new AbortController();
      const original = SESSION.run;
      let decoderRuns = 0;
      // The cancel arrives during the shared batch's third decoder step (the first job's batch ran before).
      const run = vi.spyOn(SESSION, 'run').mockImplementation(async function (this: unknown, feeds: ort.InferenceSession.FeedsType) {
        const encoding = 'attention_mask' in feeds;
        if (!encoding && (feeds as Record<string, ort.Tensor>).input_ids!.dims[0] === 2 && ++decoderRuns === 3) controller.abort();
        return original.call(this, feeds);
      });
      const jobCtx = (signal: AbortSignal): RunnerContext => ({ signal, checkpoint: async () => {} });
      // Lanes 1: a first job takes the lane; the two next wait and start together as one batch.
      const first = runner.call('translate', { texts: ['ji'], source: 'bam', target: 'fra' }, jobCtx(new AbortController().signal));
      const cancelled = runner.call('translate', { texts: ['kelen fila saba naani duuru wɔɔrɔ'], source: 'bam', target: 'fra' }, jobCtx(controller.signal));
      const kept = runner.call('translate', { texts: [SENTENCES.bam.bam], source: 'bam', target: 'fra' }, jobCtx(new AbortController().signal));
      await expect(cancelled).rejects.toThrow(/cancel/i);
      expect(((await kept) as TranslateOutput).translations).toEqual(alone.translations);
      await first;
      const encoderBatches = run.mock.calls
        .map((c) => c[0] as Record<string, ort.Tensor>)
        .filter((f) => 'attention_mask' in f)
        .map((f) => f.input_ids!.dims[0]);
      expect(encoderBatches).toEqual([1, 2]);
    } finally {
      await runner.close();
    }
  });

  it('a job cancelled while it waits for a batch never reaches the model', async () => {
    const runner = await load(path.join(root, 'nllb'), { batchLanes: 1 });
    try {
      const run = vi.spyOn(SESSION, 'run');
      const controller = new AbortController();
      const busy = runner.call('translate', { texts: [SENTENCES.bam.bam], source: 'bam', target: 'fra' }, ctx);
      const waiting = runner.call('translate', { texts: ['ji'], source: 'bam', target: 'fra' }, { signal: controller.signal, checkpoint: async () => {} });
      controller.abort();
      await expect(waiting).rejects.toThrow(/cancel/i);
      await busy;
      const encoderBatches = run.mock.calls
        .map((c) => c[0] as Record<string, ort.Tensor>)
        .filter((f) => 'attention_mask' in f)
        .map((f) => f.input_ids!.dims[0]);
      expect(encoderBatches).toEqual([1]);
    } finally {
      await runner.close();
    }
  });

  it('serves translate from a worker thread through the runner registry', async () => {
    const dir = path.join(root, 'nllb');
    const engine = new ModelEngine(
      { ...ModelEntrySchema.parse({ id: 'banjugu-1', engine: 'nllb', dir }), absoluteDir: dir },
      { intraOpThreads: 1, interOpThreads: 1 },
    );
    try {
      await engine.start();
      expect(await engine.run('translate', { texts: ['n bɛ ji min'], source: 'bam', target: 'eng' })).toEqual({
        translations: ['I bɛ water drink'],
        inputTokens: 7,
        outputTokens: 6,
      });
    } finally {
      await engine.close();
    }
  });
});

describe('splitSentences', () => {
  const texts = (text: string, maxChars?: number) => splitSentences(text, { maxChars }).map((p) => p.text);

  it('ends sentences at . ! ? … followed by space, with closing quotes kept, and keeps paragraph breaks', () => {
    const text = 'Il dit : « Bonjour. » Puis il part !\n\nÇa va ? Oui…\nFin';
    const pieces = splitSentences(text);
    expect(pieces.map((p) => p.text)).toEqual(['Il dit : « Bonjour. »', 'Puis il part !', 'Ça va ?', 'Oui…', 'Fin']);
    expect(
      joinSentences(
        pieces,
        pieces.map((p) => p.text.toUpperCase()),
      ),
    ).toBe('IL DIT : « BONJOUR. » PUIS IL PART !\n\nÇA VA ? OUI…\nFIN');
  });

  it('does not end a sentence after an abbreviation, an initial or inside a number', () => {
    expect(texts('M. Traoré et Dr. Keita ont 3.5 ans. J. Diarra aussi.')).toEqual(['M. Traoré et Dr. Keita ont 3.5 ans.', 'J. Diarra aussi.']);
  });

  it('cuts an over-long sentence at a space and drops empty input', () => {
    expect(texts('aaa bbb ccc ddd', 8)).toEqual(['aaa bbb', 'ccc ddd']);
    expect(texts('  \n ')).toEqual([]);
  });
});
