/**
 * The `@huggingface/transformers` (transformers.js) side of the engine benchmark: a temporary mirror of the
 * demo pack laid out the way transformers.js loads a local model, and its pipelines on that mirror.
 *
 * The mirror holds symlinks to the SAME ONNX and sidecar files Kuma loads, so both sides run identical
 * weights. transformers.js differs from the real export layouts in two ways, both bridged only here:
 * - it loads `onnx/model.onnx`, where optimum exports of wav2vec2 and MMS-TTS put `model.onnx` at the root;
 * - it reads every tokenizer from `tokenizer.json`, which the original wav2vec2 and MMS-TTS repos do not
 *   ship (they have `vocab.json` + `tokenizer_config.json`; the converted copies on the Hub add a
 *   `tokenizer.json`). This file writes one from the demo's own vocab.json and tokenizer_config.json,
 *   following what those tokenizers do (CTC decoder; VITS lowercase, drop characters outside the
 *   vocabulary, strip, intersperse the pad token).
 * The NLLB folders are used as they are: the optimum seq2seq layout is what transformers.js expects.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { env, pipeline } from '@huggingface/transformers';

export interface HfMirror {
  root: string;
  /** Files written (not linked) into the mirror, by layout, for the report. */
  written: string[];
  close(): void;
}

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Links every file of `from` into `to`, the model file under `onnx/`. */
function linkLayout(from: string, to: string, modelFile: string): void {
  fs.mkdirSync(path.join(to, 'onnx'), { recursive: true });
  for (const name of fs.readdirSync(from)) {
    const target = name === modelFile ? path.join(to, 'onnx', 'model.onnx') : path.join(to, name);
    fs.symlinkSync(path.join(from, name), target);
  }
}

const tokenizerJson = (fields: Record<string, unknown>) =>
  JSON.stringify({ version: '1.0', truncation: null, padding: null, post_processor: null, ...fields }, null, 1);

/**
 * Wav2Vec2CTCTokenizer as tokenizer.json: one token per character (spaces become the word delimiter),
 * CTC decoding (merge repeats, drop the pad, delimiter → space). The pad and unk tokens are listed as
 * special added tokens, as the tokenizer declares them (tokenizer_config.json) and converted copies list them.
 */
function wav2vec2Tokenizer(dir: string): string {
  const vocab = readJson(path.join(dir, 'vocab.json')) as Record<string, number>;
  const config = readJson(path.join(dir, 'tokenizer_config.json'));
  const pad = String(config.pad_token ?? '<pad>');
  const delimiter = String(config.word_delimiter_token ?? '|');
  const specials = [pad, String(config.unk_token ?? '<unk>')].filter((t) => t in vocab);
  return tokenizerJson({
    added_tokens: specials.map((content) => ({
      id: vocab[content],
      content,
      single_word: false,
      lstrip: true,
      rstrip: true,
      normalized: false,
      special: true,
    })),
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: delimiter },
    pre_tokenizer: { type: 'Split', pattern: { Regex: '' }, behavior: 'Isolated', invert: false },
    decoder: { type: 'CTC', pad_token: pad, word_delimiter_token: delimiter, cleanup: true },
    model: { vocab },
  });
}

/** VitsTokenizer (no phonemizer) as tokenizer.json: its normalisation and add_blank as normalizers. */
function vitsTokenizer(dir: string): string {
  const vocab = readJson(path.join(dir, 'vocab.json')) as Record<string, number>;
  const config = readJson(path.join(dir, 'tokenizer_config.json'));
  if (config.phonemize === true) throw new Error(`${dir}: phonemizing voices are out of scope for this benchmark`);
  const pad = Object.entries(vocab).find(([, id]) => id === 0)?.[0] ?? String(config.pad_token);
  const escape = (c: string) => (/[\\\]\-^]/.test(c) ? `\\${c}` : c);
  const singles = Object.keys(vocab).filter((k) => [...k].length === 1);
  const normalizers: unknown[] = [];
  if (config.normalize !== false) {
    normalizers.push({ type: 'Lowercase' });
    normalizers.push({ type: 'Replace', pattern: { Regex: `[^${singles.map(escape).join('')}]` }, content: '' });
    normalizers.push({ type: 'Strip', strip_left: true, strip_right: true });
  }
  // add_blank: the pad before every character and once at the end ([0, c1, 0, c2, …, 0]).
  if (config.add_blank !== false) normalizers.push({ type: 'Replace', pattern: { Regex: '(?=.)|(?<!^)$' }, content: pad });
  return tokenizerJson({
    added_tokens: [],
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: { type: 'Split', pattern: { Regex: '' }, behavior: 'Isolated', invert: false },
    decoder: null,
    model: { vocab },
  });
}

export function buildMirror(demoDir: string): HfMirror {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-bench-hf-'));
  const written: string[] = [];
  linkLayout(path.join(demoDir, 'ctc-wav2vec2'), path.join(root, 'ctc-wav2vec2'), 'model.onnx');
  fs.writeFileSync(path.join(root, 'ctc-wav2vec2', 'tokenizer.json'), wav2vec2Tokenizer(path.join(demoDir, 'ctc-wav2vec2')));
  written.push('ctc-wav2vec2/tokenizer.json');
  linkLayout(path.join(demoDir, 'vits-hf'), path.join(root, 'vits-hf'), 'model.onnx');
  fs.writeFileSync(path.join(root, 'vits-hf', 'tokenizer.json'), vitsTokenizer(path.join(demoDir, 'vits-hf')));
  written.push('vits-hf/tokenizer.json');
  for (const name of ['nllb', 'nllb-unigram']) fs.symlinkSync(path.join(demoDir, name), path.join(root, name));
  env.localModelPath = root;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  return { root, written, close: () => fs.rmSync(root, { recursive: true, force: true }) };
}

/** The same onnxruntime settings Kuma's runners use: one intra-op and one inter-op thread, all graph optimisations. */
const OPTIONS = { dtype: 'fp32', session_options: { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' } } as const;

export type HfAsr = (samples: Float32Array) => Promise<string>;
export type HfTts = (text: string) => Promise<Float32Array>;
export type HfTranslate = (texts: string[], source: string, target: string) => Promise<string[]>;

export async function loadAsr(name: string): Promise<HfAsr> {
  const asr = await pipeline('automatic-speech-recognition', name, OPTIONS);
  return async (samples) => {
    const out = (await asr(samples)) as { text: string };
    return out.text;
  };
}

export async function loadTts(name: string): Promise<HfTts> {
  const tts = await pipeline('text-to-speech', name, OPTIONS);
  return async (text) => {
    const { audio } = await tts(text);
    if (Array.isArray(audio)) throw new Error('transformers.js returned several waveforms for one text');
    return audio;
  };
}

export async function loadTranslation(name: string): Promise<HfTranslate> {
  const translator = await pipeline('translation', name, OPTIONS);
  return async (texts, source, target) => {
    const out = (await translator(texts, { src_lang: source, tgt_lang: target } as never)) as Array<{ translation_text: string }>;
    return out.map((o) => o.translation_text);
  };
}
