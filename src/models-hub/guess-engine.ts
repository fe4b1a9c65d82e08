/**
 * Guesses which Kuma engine serves a downloaded model directory, from the files each exporter writes
 * (see models/MODELS.md), and the engine options the files call for (a quantised variant, an MMS
 * language, a model file with an unusual name). The result is a suggestion printed by `models:pull`:
 * the server still checks every file and tensor when it loads the model.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { EngineType } from '../engines/manifest.js';
import { readModelMetadata } from '../engines/onnx/model-metadata.js';

export interface EngineGuess {
  engine: EngineType;
  options: Record<string, unknown>;
  /** Which files decided it, for the operator. */
  because: string;
  /** Things worth knowing (other variants present, a choice made). */
  notes: string[];
}

export class GuessError extends Error {}

/** model_type values of transformers' CTC speech encoders that the optimum export turns into `input_values → logits`. */
const CTC_MODEL_TYPES = new Set([
  'wav2vec2',
  'wav2vec2-bert',
  'wav2vec2-conformer',
  'hubert',
  'wavlm',
  'data2vec-audio',
  'unispeech',
  'unispeech-sat',
  'sew',
  'sew-d',
]);

function readJsonObject(file: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Files below `dir` (two levels: exports put ONNX files in `onnx/`), as forward-slash relative paths. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (sub: string, depth: number) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory() && depth < 2 && !entry.name.startsWith('.')) walk(rel, depth + 1);
      else if (entry.isFile() && !entry.name.endsWith('.partial')) out.push(rel);
    }
  };
  walk('', 0);
  return out.sort();
}

/**
 * Variant suffixes of an optimum seq2seq export present in `files` (`encoder_model_quantized.onnx` →
 * `_quantized`), preferring full precision. Returns the chosen suffix and the others.
 */
function seq2seqVariant(files: string[], folder: string): { variant: string; others: string[] } | null {
  const prefix = folder ? `${folder}/encoder_model` : 'encoder_model';
  const suffixes = files
    .filter((f) => f.startsWith(prefix) && f.endsWith('.onnx') && !f.slice(prefix.length).includes('/'))
    .map((f) => f.slice(prefix.length, -'.onnx'.length));
  if (!suffixes.length) return null;
  const order = ['', '_fp16', '_quantized', '_int8', '_uint8', '_q4', '_q4f16', '_bnb4'];
  const rank = (s: string) => (order.includes(s) ? order.indexOf(s) : order.length);
  const sorted = [...suffixes].sort((a, b) => rank(a) - rank(b));
  return { variant: sorted[0]!, others: sorted.slice(1) };
}

/**
 * The model file: a preferred name, else the only .onnx file, else the only full-precision one (sherpa
 * exports ship `x.onnx` beside `x.int8.onnx`).
 */
function onlyOnnx(files: string[], preferred: string[]): string | undefined {
  for (const name of preferred) if (files.includes(name)) return name;
  const onnx = files.filter((f) => f.endsWith('.onnx'));
  if (onnx.length === 1) return onnx[0];
  const full = onnx.filter((f) => !/[._-](int8|uint8|quant|quantized|fp16|q4)[._-]/i.test(f.replace(/\.onnx$/, '.')));
  return full.length === 1 ? full[0] : undefined;
}

export function guessEngine(dir: string): EngineGuess {
  if (!fs.existsSync(dir)) throw new GuessError(`${dir} does not exist`);
  const files = listFiles(dir);
  const has = (name: string) => files.includes(name);
  const config = has('config.json') ? readJsonObject(path.join(dir, 'config.json')) : null;
  const modelType = typeof config?.model_type === 'string' ? config.model_type : '';
  const notes: string[] = [];

  if (modelType === 'whisper' || modelType === 'm2m_100') {
    const engine: EngineType = modelType === 'whisper' ? 'whisper' : 'nllb';
    const folder = files.some((f) => f.startsWith('onnx/encoder_model')) ? 'onnx' : '';
    const found = seq2seqVariant(files, folder);
    if (!found)
      throw new GuessError(`${dir} has a ${modelType} config.json but no encoder_model*.onnx: export it with optimum-cli export onnx (see models/MODELS.md)`);
    const options: Record<string, unknown> = found.variant ? { variant: found.variant } : {};
    if (!folder) notes.push(`the ${engine} runner reads its ONNX files from onnx/: move them there (cd ${dir} && mkdir -p onnx && mv *.onnx* onnx/)`);
    if (found.others.length)
      notes.push(`other ONNX variants present: ${found.others.map((v) => JSON.stringify(v || 'fp32')).join(', ')} (options.variant picks one)`);
    return { engine, options, because: `config.json model_type ${modelType} with ${folder ? `${folder}/` : ''}encoder_model${found.variant}.onnx`, notes };
  }

  if (modelType === 'vits') {
    const model = onlyOnnx(files, ['model.onnx', 'onnx/model.onnx']);
    if (!model)
      throw new GuessError(
        `${dir} has a VITS config.json but no single model.onnx (export with optimum-cli export onnx; with several, pick one in options.model)`,
      );
    return {
      engine: 'vits-hf',
      options: model === 'model.onnx' || model === 'onnx/model.onnx' ? {} : { model },
      because: `config.json model_type vits with ${model}`,
      notes,
    };
  }

  if (CTC_MODEL_TYPES.has(modelType) && has('vocab.json')) {
    const model = onlyOnnx(files, ['model.onnx', 'onnx/model.onnx']);
    if (!model)
      throw new GuessError(
        `${dir} has a ${modelType} config.json but no single model.onnx: export it with optimum-cli export onnx --task automatic-speech-recognition`,
      );
    const options: Record<string, unknown> = model === 'model.onnx' || model === 'onnx/model.onnx' ? {} : { modelFile: model };
    // MMS adapter repos ship one vocabulary per language; the runner needs to know which.
    const vocab = readJsonObject(path.join(dir, 'vocab.json')) ?? {};
    const nested = Object.values(vocab).some((v) => typeof v === 'object' && v !== null);
    const tokenizer = readJsonObject(path.join(dir, 'tokenizer_config.json')) ?? {};
    if (nested && typeof tokenizer.target_lang !== 'string') {
      if ('bam' in vocab) options.language = 'bam';
      else
        notes.push(
          `vocab.json has one vocabulary per language but none for bam: set options.language (languages: ${Object.keys(vocab).slice(0, 8).join(', ')}…)`,
        );
    }
    return { engine: 'ctc-wav2vec2', options, because: `config.json model_type ${modelType} with ${model} and vocab.json`, notes };
  }

  const piperConfig = files.find((f) => f.endsWith('.onnx.json') && has(f.slice(0, -'.json'.length)));
  if (piperConfig && readJsonObject(path.join(dir, piperConfig))?.phoneme_id_map) {
    const model = piperConfig.slice(0, -'.json'.length);
    return { engine: 'vits-piper', options: model === 'model.onnx' ? {} : { model }, because: `Piper voice ${model} with ${piperConfig}`, notes };
  }

  if (has('tokens.txt')) {
    const model = onlyOnnx(files, ['model.onnx', 'model.int8.onnx']);
    if (has('model_config.json') || has('model_config.yaml')) {
      if (!model) throw new GuessError(`${dir} looks like a NeMo export (tokens.txt, model_config) but has no single model.onnx`);
      return {
        engine: 'ctc-nemo',
        options: model === 'model.onnx' ? {} : { modelFile: model },
        because: `NeMo export: ${model}, tokens.txt and ${has('model_config.json') ? 'model_config.json' : 'model_config.yaml'}`,
        notes,
      };
    }
    if (!model) throw new GuessError(`${dir} has tokens.txt but no single .onnx model file to read the sherpa-onnx metadata from`);
    const meta = readModelMetadata(path.join(dir, model));
    if (meta.model_type === 'vits' || (meta.sample_rate !== undefined && meta.n_speakers !== undefined)) {
      return {
        engine: 'vits-sherpa',
        options: model === 'model.onnx' ? {} : { model },
        because: `sherpa-onnx VITS metadata in ${model} (sample_rate ${meta.sample_rate})`,
        notes,
      };
    }
    if (meta.model_type?.startsWith('EncDec') || meta.feat_dim !== undefined || meta.subsampling_factor !== undefined) {
      return {
        engine: 'ctc-nemo',
        options: model === 'model.onnx' ? {} : { modelFile: model },
        because: `NeMo CTC metadata in ${model} (model_type ${meta.model_type ?? '?'})`,
        notes,
      };
    }
    throw new GuessError(
      `${dir} has tokens.txt and ${model}, but its metadata says neither VITS nor NeMo CTC (model_type ${JSON.stringify(meta.model_type ?? '')})`,
    );
  }

  const shown = files.slice(0, 12).join(', ') + (files.length > 12 ? ', …' : '');
  throw new GuessError(
    `Cannot tell which engine serves ${dir}${modelType ? ` (config.json model_type ${modelType})` : ''}; files: ${shown || 'none'}. ` +
      'Pass --engine (whisper, nllb, ctc-wav2vec2, ctc-nemo, vits-hf, vits-sherpa, vits-piper) or export the model as models/MODELS.md describes.',
  );
}
