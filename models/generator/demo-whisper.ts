/**
 * The demo Whisper model: a tiny encoder-decoder with exactly the Hugging Face optimum export layout of
 * Whisper (`onnx/encoder_model.onnx` + `onnx/decoder_model_merged.onnx`, or the older decoder /
 * decoder-with-past pair; fp32, "fp16-shaped" and "quantized-shaped" files) and Whisper's sidecar files, so
 * the Whisper runner is exercised end to end on real graphs with the real I/O names, dtypes and KV-cache
 * protocol. NOT a speech recogniser: it only tells speech from silence.
 *
 * What it says. The encoder finds the speech regions of the 30 s window from the log-mel energy (20 ms
 * frames; pauses under 0.34 s bridged, blips under 0.1 s dropped). The decoder writes, for each region,
 * `<|start|> phrase <|end|>` with the region's start and end as timestamp tokens (exact to the 20 ms frame
 * where the region's energy begins and ends), then `<|endoftext|>`; silence gives `<|endoftext|>` at once.
 * The phrase depends on the region's length (one bucket per second, DEMO_WHISPER_PHRASES) and on the task
 * (`<|translate|>` gives the English one). The last word of each phrase has an alternative reading one logit
 * below it, so sampling at temperature > 0 sometimes picks it while greedy never does. Everything the
 * decoder needs comes through its caches, so a runner that does not feed the presents back (or feeds the
 * empty encoder presents of a cached step) gets different output.
 *
 * Vocabulary: a byte-level BPE like Whisper's (256 byte symbols, then merges for the phrase words), followed
 * by Whisper's added tokens in the multilingual order — `<|endoftext|>`, `<|startoftranscript|>`, the 99
 * language tokens, `<|translate|>`, `<|transcribe|>`, `<|startoflm|>`, `<|startofprev|>`, `<|nocaptions|>`,
 * `<|notimestamps|>`, the 1501 timestamps `<|0.00|>`…`<|30.00|>` — and then `<|bm|>`, as Bambara fine-tunes
 * (oza75/whisper-bambara-asr-001) add it. Ids are renumbered (eot is not 50257): runners must look them up.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FRAMES, HEADS, LAYERS, D_MODEL, MELS, encoderGraph, type GraphVariant } from './demo-whisper-graph.js';
import { mergedDecoderGraph, splitDecoderGraph, type DecoderTables } from './demo-whisper-decoder.js';

/** Whisper's 99 language tokens in the multilingual vocabulary's order (v1/v2). */
export const WHISPER_LANGUAGES = (
  'en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml cy sk te fa lv bn sr az ' +
  'sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as ' +
  'tt haw ln ha ba jw su'
).split(' ');

/** What each region says, by length bucket (< 1 s, 1–2 s, 2–3 s, ≥ 3 s); `alternative` replaces the last word when sampled. */
export const DEMO_WHISPER_PHRASES = {
  transcribe: [
    { text: 'i ni ce', alternative: 'cɛ' },
    { text: 'i ka kɛnɛ wa', alternative: 'wà' },
    { text: 'tɔɔrɔ si tɛ', alternative: 'te' },
    { text: 'an bɛ baara la', alternative: 'kɔnɔ' },
  ],
  translate: [
    { text: 'hello', alternative: 'hi' },
    { text: 'how are you', alternative: 'ya' },
    { text: 'no problem', alternative: 'worries' },
    { text: 'we are at work', alternative: 'home' },
  ],
} as const;
export const DEMO_WHISPER_BUCKET_SECONDS = 1;

export type WhisperDemoVariant = 'fp32' | 'fp16' | 'quantized';
export interface WhisperDemoOptions {
  variant?: WhisperDemoVariant;
  layout?: 'merged' | 'split';
  /** Folder under outDir (default `whisper`, `whisper-fp16`, `whisper-quantized`, with `-split` for the split layout). */
  name?: string;
  /** Add `<|bm|>` after the timestamps (default true); without it the vocabulary is stock multilingual Whisper's. */
  bambaraToken?: boolean;
  /** Declare `cache_position` on the decoders, as transformers 4.43–4.45 exports do. */
  cachePosition?: boolean;
}

/** File suffix of each variant, as optimum / transformers.js name them. */
export const WHISPER_VARIANT_SUFFIX: Record<WhisperDemoVariant, string> = { fp32: '', fp16: '_fp16', quantized: '_quantized' };

export function whisperDemoFolder(options: WhisperDemoOptions = {}): string {
  const variant = options.variant ?? 'fp32';
  return options.name ?? `whisper${variant === 'fp32' ? '' : `-${variant}`}${options.layout === 'split' ? '-split' : ''}`;
}

/**
 * GPT-2's byte-level symbols (what ByteLevel pre-tokenisers and decoders use): printable bytes stand for
 * themselves, the others for U+0100 onwards. Vocabulary ids 0..255 follow `order` ("!" is 0, "Ġ" is 220).
 */
function byteSymbols(): { symbols: string[]; byteChar: Map<number, string> } {
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const order = [...range(33, 126), ...range(161, 172), ...range(174, 255)];
  const byteChar = new Map(order.map((b) => [b, String.fromCodePoint(b)]));
  for (let b = 0, extra = 0; b < 256; b++) {
    if (byteChar.has(b)) continue;
    order.push(b);
    byteChar.set(b, String.fromCodePoint(256 + extra++));
  }
  return { symbols: order.map((b) => byteChar.get(b)!), byteChar };
}

interface Vocabulary {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  specialTokensMap: Record<string, unknown>;
  ids: Map<string, number>;
  size: number;
  /** id of the `Ġword` token of each phrase word. */
  wordId(word: string): number;
}

function buildVocabulary(bambaraToken: boolean): Vocabulary {
  const { symbols, byteChar } = byteSymbols();
  const vocab = new Map<string, number>(symbols.map((s, i) => [s, i]));
  const merges: string[] = [];
  const spelled = (word: string) => [...new TextEncoder().encode(` ${word}`)].map((b) => byteChar.get(b)!);
  const words = new Set(Object.values(DEMO_WHISPER_PHRASES).flatMap((list) => list.flatMap((p) => [...p.text.split(' '), p.alternative])));
  // One merge chain per word, left to right: every word becomes one `Ġword` token.
  for (const word of [...words].sort()) {
    const chars = spelled(word);
    let left = chars[0]!;
    for (const next of chars.slice(1)) {
      const merged = left + next;
      if (!vocab.has(merged)) {
        vocab.set(merged, vocab.size);
        merges.push(`${left} ${next}`);
      }
      left = merged;
    }
  }
  const added = [
    '<|endoftext|>',
    '<|startoftranscript|>',
    ...WHISPER_LANGUAGES.map((l) => `<|${l}|>`),
    '<|translate|>',
    '<|transcribe|>',
    '<|startoflm|>',
    '<|startofprev|>',
    '<|nocaptions|>',
    '<|notimestamps|>',
    ...Array.from({ length: FRAMES + 1 }, (_, i) => `<|${(i * 0.02).toFixed(2)}|>`),
    ...(bambaraToken ? ['<|bm|>'] : []),
  ];
  const ids = new Map(vocab);
  const textSize = vocab.size;
  added.forEach((content, i) => ids.set(content, textSize + i));
  const addedTokens = added.map((content, i) => ({
    // Recent Whisper tokenizer.json files list the timestamps as non-special added tokens.
    id: textSize + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: !/^<\|\d+\.\d\d\|>$/.test(content),
  }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '<|startoftranscript|>', type_id: 0 } },
        { SpecialToken: { id: '<|notimestamps|>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|endoftext|>', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '<|startoftranscript|>', type_id: 0 } },
        { SpecialToken: { id: '<|notimestamps|>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '<|endoftext|>', type_id: 1 } },
      ],
      special_tokens: Object.fromEntries(
        ['<|startoftranscript|>', '<|notimestamps|>', '<|endoftext|>'].map((t) => [t, { id: t, ids: [ids.get(t)!], tokens: [t] }]),
      ),
    },
    decoder: { ...byteLevel, add_prefix_space: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab),
      merges,
    },
  };
  const specialTokensMap = {
    additional_special_tokens: added.filter((t) => !/^<\|\d+\.\d\d\|>$/.test(t) && t !== '<|endoftext|>'),
    bos_token: '<|endoftext|>',
    eos_token: '<|endoftext|>',
    pad_token: '<|endoftext|>',
    unk_token: '<|endoftext|>',
  };
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    clean_up_tokenization_spaces: true,
    errors: 'replace',
    model_max_length: 1024,
    processor_class: 'WhisperProcessor',
    return_attention_mask: false,
    tokenizer_class: 'WhisperTokenizer',
    added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
    ...specialTokensMap,
  };
  return {
    tokenizerJson,
    tokenizerConfig,
    specialTokensMap,
    ids,
    size: textSize + added.length,
    wordId: (word) => ids.get(spelled(word).join(''))!,
  };
}

function decoderTables(v: Vocabulary): DecoderTables {
  const rows = [...DEMO_WHISPER_PHRASES.transcribe, ...DEMO_WHISPER_PHRASES.translate];
  const width = Math.max(...rows.map((r) => r.text.split(' ').length));
  const pad = (ids: number[]) => [...ids, ...new Array<number>(width - ids.length).fill(-1)];
  return {
    vocab: v.size,
    eot: v.ids.get('<|endoftext|>')!,
    translate: v.ids.get('<|translate|>')!,
    noTimestamps: v.ids.get('<|notimestamps|>')!,
    timestampBegin: v.ids.get('<|0.00|>')!,
    phrases: rows.map((r) => pad(r.text.split(' ').map(v.wordId))),
    alternatives: rows.map((r) => {
      const words = r.text.split(' ');
      return pad(words.map((_, i) => (i === words.length - 1 ? v.wordId(r.alternative) : -1)));
    }),
  };
}

export async function generateWhisperModel(outDir: string, options: WhisperDemoOptions = {}): Promise<void> {
  const variant = options.variant ?? 'fp32';
  const dir = path.join(outDir, whisperDemoFolder(options));
  const vocabulary = buildVocabulary(options.bambaraToken ?? true);
  const tables = decoderTables(vocabulary);
  const graph: GraphVariant = { fp16: variant === 'fp16', quantized: variant === 'quantized', cachePosition: options.cachePosition ?? false };
  const suffix = WHISPER_VARIANT_SUFFIX[variant];
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  const onnx = (name: string, bytes: Uint8Array) => fs.writeFileSync(path.join(dir, 'onnx', `${name}${suffix}.onnx`), bytes);
  onnx('encoder_model', encoderGraph(graph));
  if (options.layout === 'split') {
    onnx('decoder_model', splitDecoderGraph(tables, graph, false));
    onnx('decoder_with_past_model', splitDecoderGraph(tables, graph, true));
  } else onnx('decoder_model_merged', mergedDecoderGraph(tables, graph));

  const json = (name: string, value: unknown, indent: number | undefined = 2) =>
    fs.writeFileSync(path.join(dir, name), `${JSON.stringify(value, null, indent)}\n`);
  const id = (token: string) => vocabulary.ids.get(token)!;
  const eot = id('<|endoftext|>');
  json('tokenizer.json', vocabulary.tokenizerJson, undefined);
  json('tokenizer_config.json', vocabulary.tokenizerConfig);
  json('special_tokens_map.json', vocabulary.specialTokensMap);
  json('config.json', {
    _name_or_path: 'kuma/demo-whisper',
    architectures: ['WhisperForConditionalGeneration'],
    model_type: 'whisper',
    activation_function: 'gelu',
    apply_spec_augment: false,
    begin_suppress_tokens: [id('Ġ'), eot],
    bos_token_id: eot,
    d_model: D_MODEL,
    decoder_attention_heads: HEADS,
    decoder_ffn_dim: 4 * D_MODEL,
    decoder_layers: LAYERS,
    decoder_start_token_id: id('<|startoftranscript|>'),
    encoder_attention_heads: HEADS,
    encoder_ffn_dim: 4 * D_MODEL,
    encoder_layers: 1,
    eos_token_id: eot,
    forced_decoder_ids: null,
    is_encoder_decoder: true,
    max_length: 448,
    max_source_positions: FRAMES,
    max_target_positions: 448,
    median_filter_width: 7,
    num_hidden_layers: 1,
    num_mel_bins: MELS,
    pad_token_id: eot,
    scale_embedding: false,
    suppress_tokens: [],
    torch_dtype: variant === 'fp16' ? 'float16' : 'float32',
    transformers_version: '4.46.0',
    use_cache: true,
    vocab_size: vocabulary.size,
  });
  // Fine-tunes often ship only this much: no lang_to_id, no_timestamps_token_id or forced_decoder_ids.
  json('generation_config.json', {
    _from_model_config: true,
    bos_token_id: eot,
    decoder_start_token_id: id('<|startoftranscript|>'),
    eos_token_id: eot,
    max_length: 448,
    pad_token_id: eot,
    transformers_version: '4.46.0',
  });
  json('preprocessor_config.json', {
    chunk_length: 30,
    feature_extractor_type: 'WhisperFeatureExtractor',
    feature_size: MELS,
    hop_length: 160,
    n_fft: 400,
    n_samples: 480000,
    nb_max_frames: 3000,
    padding_side: 'right',
    padding_value: 0.0,
    processor_class: 'WhisperProcessor',
    return_attention_mask: false,
    sampling_rate: 16000,
  });
}
