/**
 * Writes the demo TTS models: the demo voice (demo-voice.ts) exported in the three VITS layouts Kuma
 * loads, each with exactly the real layout's files, input/output names, dtypes and ranks:
 *
 *   vits-hf/      facebook/mms-tts-* as exported by optimum: model.onnx (input_ids, attention_mask →
 *                 waveform, spectrogram), config.json, vocab.json, tokenizer_config.json; 16 kHz.
 *   vits-sherpa/  sherpa-onnx VITS export: model.onnx (x, x_length, noise_scale, length_scale,
 *                 noise_scale_w, sid → y) with metadata_props, tokens.txt; 22.05 kHz, 5 speakers.
 *   vits-piper/   Piper voice: model.onnx (input, input_lengths, scales → output) + model.onnx.json with
 *                 phoneme_type "text"; 22.05 kHz, single speaker.
 *
 * Every symbol token sounds as renderSymbol(index, rate); the blank/pad token (id 0) is DEMO_GAP_SECONDS
 * of silence; sherpa's <unk> is DEMO_SYMBOL_SECONDS of silence; Piper's ^ and $ make no sound. Output is
 * deterministic: the same bytes on every run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEMO_SYMBOLS, symbolIndex } from './demo-voice.js';
import { buildVitsGraph, type DemoTokenSound } from './demo-vits-graph.js';

/** The sherpa demo stands for the legacy djelia-tts-v1 voice, which has speakers 0–4. */
export const DEMO_SHERPA_SPEAKER_GAINS = [1, 0.85, 0.7, 0.55, 0.4];

/**
 * Symbols ordered by code point (' ', a…z, ŋ, ɔ, ɛ, ɲ), so token ids differ from demo-voice indices, as
 * a real vocabulary's would: a runner that confused the two would be caught.
 */
const ORDERED_SYMBOLS = [...DEMO_SYMBOLS].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);

const symbolSound = (s: string): DemoTokenSound => ({ kind: 'symbol', index: symbolIndex(s) });

function write(dir: string, files: Record<string, string | Uint8Array>): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

function writeHf(dir: string): void {
  // MMS has no separate pad token: its converter makes vocab.txt's first symbol the pad, and the
  // tokenizer intersperses id 0. The demo puts a character the voice never speaks there.
  const vocab: Record<string, number> = { _: 0 };
  ORDERED_SYMBOLS.forEach((s, i) => (vocab[s] = i + 1));
  const sounds: DemoTokenSound[] = [{ kind: 'gap' }, ...ORDERED_SYMBOLS.map(symbolSound)];
  const dims = ['batch_size', 'sequence_length'];
  const model = buildVitsGraph({
    name: 'kuma-demo-mms-tts-bam',
    sampleRate: 16000,
    sounds,
    inputs: [
      { name: 'input_ids', type: 'int64', dims },
      { name: 'attention_mask', type: 'int64', dims },
    ],
    ids: 'input_ids',
    validLength: { name: 'attention_mask', kind: 'mask' },
    output: { name: 'waveform', dims: ['batch_size', 'n_samples'] },
    // VitsModel's `spectrogram` is the decoder input: flow channels × frames of 256 samples.
    spectrogram: { name: 'spectrogram', dims: ['batch_size', 192, 'n_frames'], channels: 192, hop: 256 },
  });
  const config = {
    architectures: ['VitsModel'],
    model_type: 'vits',
    sampling_rate: 16000,
    vocab_size: sounds.length,
    num_speakers: 1,
    speaking_rate: 1.0,
    noise_scale: 0.667,
    noise_scale_duration: 0.8,
    hidden_size: 192,
    flow_size: 192,
    upsample_rates: [8, 8, 2, 2],
  };
  const tokenizerConfig = {
    add_blank: true,
    clean_up_tokenization_spaces: true,
    is_uroman: false,
    language: 'bam',
    normalize: true,
    pad_token: '_',
    phonemize: false,
    tokenizer_class: 'VitsTokenizer',
    unk_token: '<unk>',
  };
  write(dir, {
    'model.onnx': model,
    'config.json': json(config),
    'vocab.json': json(vocab),
    'tokenizer_config.json': json(tokenizerConfig),
  });
}

/** Builds the sherpa demo; `lengthInput` lets tests check the runner on both spellings seen in the wild. */
export function sherpaDemoFiles(lengthInput: 'x_length' | 'x_lengths' = 'x_length'): Record<string, string | Uint8Array> {
  const unkId = ORDERED_SYMBOLS.length + 1;
  const sounds: DemoTokenSound[] = [{ kind: 'gap' }, ...ORDERED_SYMBOLS.map(symbolSound), { kind: 'unk' }];
  // sherpa's tokens.txt: `symbol id` per line (the space line reads "  1"); the MMS converter also lists
  // each letter's capital on the same id.
  const lines = ['_ 0'];
  ORDERED_SYMBOLS.forEach((s, i) => {
    lines.push(`${s} ${i + 1}`);
    if (s.toUpperCase() !== s) lines.push(`${s.toUpperCase()} ${i + 1}`);
  });
  lines.push(`<unk> ${unkId}`);
  const model = buildVitsGraph({
    name: 'kuma-demo-bam-vits',
    sampleRate: 22050,
    sounds,
    inputs: [
      { name: 'x', type: 'int64', dims: ['N', 'L'] },
      { name: lengthInput, type: 'int64', dims: ['N'] },
      { name: 'noise_scale', type: 'float', dims: [1] },
      { name: 'length_scale', type: 'float', dims: [1] },
      { name: 'noise_scale_w', type: 'float', dims: [1] },
      { name: 'sid', type: 'int64', dims: [1] },
    ],
    ids: 'x',
    validLength: { name: lengthInput, kind: 'lengths' },
    lengthScale: { name: 'length_scale' },
    speaker: { name: 'sid', gains: DEMO_SHERPA_SPEAKER_GAINS },
    output: { name: 'y', dims: ['N', 1, 'num_samples'] },
    metadata: {
      model_type: 'vits',
      comment: 'kuma demo voice in the sherpa-onnx VITS layout',
      language: 'bam',
      frontend: 'characters',
      add_blank: '1',
      n_speakers: String(DEMO_SHERPA_SPEAKER_GAINS.length),
      sample_rate: '22050',
    },
  });
  return { 'model.onnx': model, 'tokens.txt': `${lines.join('\n')}\n` };
}

function writePiper(dir: string): void {
  // Piper's conventions: pad "_" = 0, BOS "^" = 1, EOS "$" = 2; every value is a list of ids.
  const map: Record<string, number[]> = { _: [0], '^': [1], $: [2] };
  ORDERED_SYMBOLS.forEach((s, i) => (map[s] = [i + 3]));
  const sounds: DemoTokenSound[] = [{ kind: 'gap' }, { kind: 'none' }, { kind: 'none' }, ...ORDERED_SYMBOLS.map(symbolSound)];
  const model = buildVitsGraph({
    name: 'kuma-demo-piper-bm',
    sampleRate: 22050,
    sounds,
    inputs: [
      { name: 'input', type: 'int64', dims: ['batch_size', 'phonemes'] },
      { name: 'input_lengths', type: 'int64', dims: ['batch_size'] },
      { name: 'scales', type: 'float', dims: [3] },
    ],
    ids: 'input',
    validLength: { name: 'input_lengths', kind: 'lengths' },
    lengthScale: { name: 'scales', index: 1 },
    output: { name: 'output', dims: ['batch_size', 1, 1, 'time'] },
  });
  const config = {
    dataset: 'kuma-demo',
    audio: { sample_rate: 22050, quality: 'medium' },
    espeak: { voice: 'bm' },
    language: { code: 'bm_ML', family: 'bm', region: 'ML', name_native: 'Bamanankan', name_english: 'Bambara', country_english: 'Mali' },
    inference: { noise_scale: 0.667, length_scale: 1, noise_w: 0.8 },
    phoneme_type: 'text',
    phoneme_map: {},
    phoneme_id_map: map,
    num_symbols: sounds.length,
    num_speakers: 1,
    speaker_id_map: {},
    piper_version: '1.0.0',
  };
  write(dir, { 'model.onnx': model, 'model.onnx.json': json(config) });
}

export async function generateVitsModels(outDir: string): Promise<void> {
  writeHf(path.join(outDir, 'vits-hf'));
  write(path.join(outDir, 'vits-sherpa'), sherpaDemoFiles());
  writePiper(path.join(outDir, 'vits-piper'));
}
