/**
 * The three VITS export layouts Kuma loads, as their real exporters write them: where the files are, how
 * the sample rate and speakers are declared, how text becomes token ids, and which tensors the model
 * takes. Everything a layout needs is checked at load, with errors that name the file or field at fault.
 *
 * - `vits-hf`: facebook/mms-tts-* exported by optimum (model.onnx or onnx/model.onnx; config.json,
 *   vocab.json, tokenizer_config.json). Tokenised like transformers' VitsTokenizer: lowercase (except
 *   characters the vocabulary has as written), keep vocabulary characters only, strip, intersperse id 0.
 *   Noise and speaking rate are frozen into the graph.
 * - `vits-sherpa`: sherpa-onnx VITS (model.onnx with metadata_props; tokens.txt). Characters map through
 *   tokens.txt (else lowercased, else `<unk>` when listed, else skipped, as sherpa's character frontend).
 * - `vits-piper`: Piper voice (X.onnx + X.onnx.json). Only `phoneme_type: "text"` voices: lowercase, NFD,
 *   phoneme_map, then `^ _ p1 _ p2 _ … pn _ $` through phoneme_id_map.
 *
 * `tokenize(text, { boundaryAfter })` can end the sequence with the vocabulary's space (before Piper's `$`
 * and after the HF strip): the runner speaks a phrase join as the word boundary it is. `characters` lists
 * the vocabulary's single characters, blank and markers excluded, from which the runner derives its alphabet.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readModelMetadata } from '../onnx/model-metadata.js';

export type VitsEngine = 'vits-hf' | 'vits-sherpa' | 'vits-piper';

export interface Tokenized {
  ids: number[];
  /** Spoken vocabulary symbols in `ids` (not blanks, markers, spaces or `<unk>`): 0 means nothing to say. */
  symbols: number;
}

export interface TokenizeOptions {
  /** End with the voice's space token: the text continues in the next phrase, synthesized apart. */
  boundaryAfter?: boolean;
}

export interface VitsLayout {
  engine: VitsEngine;
  modelFile: string;
  sampleRate: number;
  speakers: number;
  vocabularySize: number;
  /** Single characters the vocabulary lists (specials and markers excluded): candidates for the alphabet. */
  characters: string[];
  /** Which request knobs reach the model (the HF export freezes its scales). */
  controls: { noiseScale: boolean; lengthScale: boolean; speaker: boolean };
  defaults: { noiseScale: number; lengthScale: number; noiseScaleW: number };
  tokenize(text: string, options?: TokenizeOptions): Tokenized;
  /** Names of the model's inputs by role, resolved against what the session declares. */
  bind(inputNames: readonly string[]): VitsBinding;
}

export interface VitsBinding {
  required: string[];
  output: string;
  ids: string;
  length?: { name: string; kind: 'mask' | 'lengths' };
  scales?: { kind: 'separate'; noise: string; length: string; noiseW: string } | { kind: 'packed'; name: string };
  speaker?: string;
}

export class VitsLayoutError extends Error {}

function readJson(file: string): Record<string, unknown> {
  if (!fs.existsSync(file)) throw new VitsLayoutError(`Missing ${path.basename(file)}: ${file} does not exist`);
  try {
    const value = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
    return value as Record<string, unknown>;
  } catch (err) {
    throw new VitsLayoutError(`Cannot read ${file}: ${(err as Error).message}`);
  }
}

function positiveInt(value: unknown, where: string): number {
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) throw new VitsLayoutError(`${where} must be a positive integer (got ${JSON.stringify(value)})`);
  return n;
}

/** The model file: `options.model` if set, else the first candidate that exists, else the only .onnx file. */
function findModel(dir: string, option: unknown, candidates: string[]): string {
  if (typeof option === 'string') {
    const file = path.resolve(dir, option);
    if (!fs.existsSync(file)) throw new VitsLayoutError(`Model file not found: ${file} (options.model)`);
    return file;
  }
  for (const name of candidates) if (fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  const onnx = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')) : [];
  if (onnx.length === 1) return path.join(dir, onnx[0]!);
  throw new VitsLayoutError(
    `No model file in ${dir}: expected ${candidates.join(' or ')}${onnx.length > 1 ? ` (several .onnx files: set options.model)` : ''}`,
  );
}

const isSpace = (c: string) => /\s/u.test(c);

function intersperse(ids: number[], blank: number): number[] {
  const out = [blank];
  for (const id of ids) out.push(id, blank);
  return out;
}

function loadHf(dir: string, options: Record<string, unknown>): VitsLayout {
  const modelFile = findModel(dir, options.model, ['model.onnx', 'onnx/model.onnx']);
  const config = readJson(path.join(dir, 'config.json'));
  const sampleRate = positiveInt(config.sampling_rate, `${path.join(dir, 'config.json')}: sampling_rate`);
  const vocabFile = path.join(dir, 'vocab.json');
  const vocab = new Map<string, number>();
  for (const [symbol, id] of Object.entries(readJson(vocabFile))) {
    if (!Number.isInteger(id)) throw new VitsLayoutError(`${vocabFile}: the id of ${JSON.stringify(symbol)} is not an integer`);
    vocab.set(symbol, id as number);
  }
  const tokFile = path.join(dir, 'tokenizer_config.json');
  // VitsTokenizer's defaults apply when a repo ships no tokenizer_config.json.
  const tok = fs.existsSync(tokFile) ? readJson(tokFile) : {};
  if (tok.phonemize === true) throw new VitsLayoutError(`${tokFile}: phonemize is true; this voice needs eSpeak phonemization, which Kuma does not do`);
  const addBlank = tok.add_blank !== false;
  const normalize = tok.normalize !== false;
  const multiChar = [...vocab.keys()].filter((k) => [...k].length > 1);

  // With add_blank, id 0 is the blank interspersed between symbols: a character that maps to it is not spoken.
  const spoken = (c: string) => vocab.has(c) && !(addBlank && vocab.get(c) === 0);

  const tokenize = (text: string, options: TokenizeOptions = {}): Tokenized => {
    // VitsTokenizer.normalize_text: keep vocabulary entries as written, lowercase everything else.
    let s = '';
    for (let i = 0; i < text.length;) {
      const entry = normalize ? multiChar.find((k) => text.startsWith(k, i)) : undefined;
      const c = entry ?? String.fromCodePoint(text.codePointAt(i)!);
      s += !normalize || vocab.has(c) ? c : c.toLowerCase();
      i += c.length;
    }
    if (tok.language === 'ron') s = s.replace(/ț/g, 'ţ');
    const kept = [...s]
      .filter((c) => vocab.has(c))
      .join('')
      .trim();
    const chars = [...kept];
    if (options.boundaryAfter && vocab.has(' ')) chars.push(' ');
    const ids = chars.map((c) => vocab.get(c)!);
    return { ids: addBlank ? intersperse(ids, 0) : ids, symbols: chars.filter((c) => !isSpace(c) && spoken(c)).length };
  };

  return {
    engine: 'vits-hf',
    modelFile,
    sampleRate,
    speakers: 1,
    vocabularySize: vocab.size,
    characters: [...vocab.keys()].filter((k) => [...k].length === 1 && spoken(k)),
    controls: { noiseScale: false, lengthScale: false, speaker: false },
    defaults: {
      noiseScale: Number(config.noise_scale ?? 0.667),
      lengthScale: Number(config.speaking_rate ?? 1),
      noiseScaleW: Number(config.noise_scale_duration ?? 0.8),
    },
    tokenize,
    bind: (names) => ({
      required: ['input_ids'],
      output: 'waveform',
      ids: 'input_ids',
      length: names.includes('attention_mask') ? { name: 'attention_mask', kind: 'mask' } : undefined,
    }),
  };
}

/** sherpa-onnx tokens.txt: `symbol id` per line; a line holding only an id is the space symbol. */
function parseTokens(file: string): Map<string, number> {
  if (!fs.existsSync(file)) throw new VitsLayoutError(`Missing tokens.txt: ${file} does not exist`);
  const tokens = new Map<string, number>();
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/\r$/, '');
      if (!line.trim()) return;
      const parts = line.trim().split(/\s+/);
      const [symbol, id] = parts.length === 1 ? [' ', parts[0]!] : [parts[0]!, parts[1]!];
      if (parts.length > 2 || !/^\d+$/.test(id)) throw new VitsLayoutError(`${file}:${i + 1}: expected "symbol id", got ${JSON.stringify(line)}`);
      if (!tokens.has(symbol)) tokens.set(symbol, Number(id));
    });
  if (!tokens.size) throw new VitsLayoutError(`${file} lists no tokens`);
  return tokens;
}

function loadSherpa(dir: string, options: Record<string, unknown>): VitsLayout {
  const modelFile = findModel(dir, options.model, ['model.onnx']);
  const tokens = parseTokens(path.join(dir, options.tokens === undefined ? 'tokens.txt' : String(options.tokens)));
  const meta = readModelMetadata(modelFile);
  if (meta.sample_rate === undefined) throw new VitsLayoutError(`${modelFile} has no sample_rate in its metadata_props: not a sherpa-onnx VITS export`);
  const sampleRate = positiveInt(meta.sample_rate, `${modelFile}: metadata sample_rate`);
  if (meta.frontend !== 'characters' && fs.existsSync(path.join(dir, 'lexicon.txt'))) {
    throw new VitsLayoutError(
      `${modelFile} is a lexicon/phoneme voice (lexicon.txt, no frontend=characters); Kuma supports character-based sherpa-onnx voices only`,
    );
  }
  const addBlank = meta.add_blank === '1';
  const blank = Number(meta.blank_id ?? 0);
  // Explicit only: sherpa's own default (BOS = EOS = blank) would just add blanks at both ends.
  const bosEos = meta.use_eos_bos === '1' ? [Number(meta.bos_id ?? 0), Number(meta.eos_id ?? 0)] : null;
  const unk = tokens.get('<unk>');
  const speakers = Math.max(1, Number(meta.n_speakers ?? 1) || 1);

  const space = tokens.get(' ');
  const tokenize = (text: string, options: TokenizeOptions = {}): Tokenized => {
    const ids: number[] = [];
    let symbols = 0;
    for (const c of text) {
      const known = tokens.get(c) ?? tokens.get(c.toLowerCase());
      const id = known ?? unk;
      if (id === undefined) continue;
      ids.push(id);
      if (known !== undefined && !isSpace(c) && !(addBlank && known === blank)) symbols++;
    }
    if (options.boundaryAfter && space !== undefined) ids.push(space);
    let seq = addBlank ? intersperse(ids, blank) : ids;
    if (bosEos) seq = [bosEos[0]!, ...seq, bosEos[1]!];
    return { ids: seq, symbols };
  };

  return {
    engine: 'vits-sherpa',
    modelFile,
    sampleRate,
    speakers,
    vocabularySize: new Set(tokens.values()).size,
    characters: [...tokens.keys()].filter((k) => [...k].length === 1 && k !== '<unk>' && !(addBlank && tokens.get(k) === blank)),
    controls: { noiseScale: true, lengthScale: true, speaker: speakers > 1 },
    defaults: { noiseScale: 0.667, lengthScale: 1, noiseScaleW: 0.8 },
    tokenize,
    bind: (names) => {
      // sherpa's exporters spell the lengths input `x_length` (MMS, VCTK scripts) or `x_lengths`.
      const length = names.includes('x_lengths') ? 'x_lengths' : 'x_length';
      const speaker = names.find((n) => n === 'sid' || n === 'speaker');
      if (speakers > 1 && !speaker) throw new VitsLayoutError(`${modelFile}: metadata says ${speakers} speakers but the model has no sid input`);
      return {
        required: ['x', length, 'noise_scale', 'length_scale', 'noise_scale_w'],
        output: 'y',
        ids: 'x',
        length: { name: length, kind: 'lengths' },
        scales: { kind: 'separate', noise: 'noise_scale', length: 'length_scale', noiseW: 'noise_scale_w' },
        speaker,
      };
    },
  };
}

function loadPiper(dir: string, options: Record<string, unknown>): VitsLayout {
  const modelFile = findModel(dir, options.model, ['model.onnx']);
  const configFile = `${modelFile}.json`;
  const config = readJson(configFile);
  const phonemeType = config.phoneme_type ?? 'espeak'; // Piper's default
  if (phonemeType !== 'text') {
    throw new VitsLayoutError(
      `${configFile}: phoneme_type ${JSON.stringify(phonemeType)} needs eSpeak-NG phonemization, which Kuma does not do; use a Piper voice trained with phoneme_type "text" (characters)`,
    );
  }
  const audio = (config.audio ?? {}) as Record<string, unknown>;
  const sampleRate = positiveInt(audio.sample_rate, `${configFile}: audio.sample_rate`);
  const idMap = config.phoneme_id_map as Record<string, number[]> | undefined;
  if (!idMap || typeof idMap !== 'object') throw new VitsLayoutError(`${configFile} has no phoneme_id_map`);
  for (const marker of ['_', '^', '$']) {
    if (!Array.isArray(idMap[marker]))
      throw new VitsLayoutError(`${configFile}: phoneme_id_map has no ${JSON.stringify(marker)} (Piper's pad, BOS and EOS are _ ^ $)`);
  }
  const phonemeMap = (config.phoneme_map ?? {}) as Record<string, string[]>;
  const inference = (config.inference ?? {}) as Record<string, unknown>;
  const speakers = Math.max(1, Number(config.num_speakers ?? 1) || 1);
  const [pad, bos, eos] = [idMap._!, idMap['^']!, idMap.$!];

  const tokenize = (text: string, options: TokenizeOptions = {}): Tokenized => {
    // piper-phonemize's codepoint phonemes: lowercase, NFD (a tone mark becomes its own codepoint).
    const ids: number[] = [...bos, ...pad];
    let symbols = 0;
    const boundary = options.boundaryAfter && idMap[' '] ? ' ' : '';
    for (const c of text.toLowerCase().normalize('NFD') + boundary) {
      for (const phoneme of phonemeMap[c] ?? [c]) {
        const mapped = idMap[phoneme];
        if (!mapped || phoneme === '_' || phoneme === '^' || phoneme === '$') continue; // missing: skipped, as Piper does
        ids.push(...mapped, ...pad);
        if (!isSpace(phoneme)) symbols++;
      }
    }
    ids.push(...eos);
    return { ids, symbols };
  };

  return {
    engine: 'vits-piper',
    modelFile,
    sampleRate,
    speakers,
    vocabularySize: Object.keys(idMap).length,
    characters: [...Object.keys(idMap), ...Object.keys(phonemeMap)].filter((k) => [...k].length === 1 && !['_', '^', '$'].includes(k)),
    controls: { noiseScale: true, lengthScale: true, speaker: speakers > 1 },
    defaults: {
      noiseScale: Number(inference.noise_scale ?? 0.667),
      lengthScale: Number(inference.length_scale ?? 1),
      noiseScaleW: Number(inference.noise_w ?? 0.8),
    },
    tokenize,
    bind: (names) => {
      const speaker = names.includes('sid') ? 'sid' : undefined;
      if (speakers > 1 && !speaker) throw new VitsLayoutError(`${modelFile}: ${configFile} says ${speakers} speakers but the model has no sid input`);
      return {
        required: ['input', 'input_lengths', 'scales'],
        output: 'output',
        ids: 'input',
        length: { name: 'input_lengths', kind: 'lengths' },
        scales: { kind: 'packed', name: 'scales' },
        speaker,
      };
    },
  };
}

export function loadVitsLayout(engine: string, dir: string, options: Record<string, unknown>): VitsLayout {
  if (!fs.existsSync(dir)) throw new VitsLayoutError(`Model directory not found: ${dir}`);
  if (engine === 'vits-hf') return loadHf(dir, options);
  if (engine === 'vits-sherpa') return loadSherpa(dir, options);
  if (engine === 'vits-piper') return loadPiper(dir, options);
  throw new VitsLayoutError(`The VITS runner does not serve engine ${engine}`);
}
