/**
 * Hugging Face `tokenizer.json` files (BPE, Unigram, WordPiece; Metaspace/TemplateProcessing/...) run with
 * `@huggingface/tokenizers`, the pure-JS port (no native code in the workers). Adds what the runners need:
 * encode without the post-processor's specials (runners build their own prompts), look up added tokens such
 * as language codes by string, and decode the way transformers does (skip specials, Metaspace `▁` → space,
 * clean spaces before punctuation).
 *
 * Known differences from the Rust library, measured by test/unit/engines/mt/tokenizer-agreement.test.ts:
 * the `Precompiled` normaliser is approximated by NFKC (plus sentencepiece's control/space rules), and
 * consecutive unknown characters give one `<unk>` each instead of one fused `<unk>`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

interface AddedTokenJson {
  id: number;
  content: string;
  special?: boolean;
}

export class TextTokenizer {
  /** `model.type` of tokenizer.json (`BPE`, `Unigram`, ...). */
  readonly modelType: string;
  /** Ids of every special added token (skipped when decoding). */
  readonly specialIds: ReadonlySet<number>;
  private readonly added = new Map<string, number>();
  private readonly cleanUpSpaces: boolean;

  private constructor(
    private readonly tokenizer: Tokenizer,
    json: { model?: { type?: string }; added_tokens?: AddedTokenJson[] },
    config: Record<string, unknown>,
  ) {
    this.modelType = json.model?.type ?? (Array.isArray((json.model as { vocab?: unknown })?.vocab) ? 'Unigram' : 'BPE');
    const special = new Set<number>();
    for (const token of json.added_tokens ?? []) {
      this.added.set(token.content, token.id);
      if (token.special) special.add(token.id);
    }
    this.specialIds = special;
    this.cleanUpSpaces = config.clean_up_tokenization_spaces !== false;
  }

  /** Loads `tokenizer.json` (required) and `tokenizer_config.json` (optional) from a model directory. */
  static fromDirectory(dir: string): TextTokenizer {
    const file = path.join(dir, 'tokenizer.json');
    if (!fs.existsSync(file)) throw new Error(`Tokenizer file not found: ${file}`);
    const configFile = path.join(dir, 'tokenizer_config.json');
    const config = fs.existsSync(configFile) ? (JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>) : {};
    return TextTokenizer.fromJson(JSON.parse(fs.readFileSync(file, 'utf8')), config, file);
  }

  static fromJson(json: Record<string, unknown>, config: Record<string, unknown> = {}, source = 'tokenizer.json'): TextTokenizer {
    try {
      // The library reads only generic keys from the config; the tokenizer class's extras are harmless.
      return new TextTokenizer(new Tokenizer(json, config), json, config);
    } catch (err) {
      throw new Error(`Cannot load ${source}: ${(err as Error).message}`);
    }
  }

  /** Token ids of `text`, without the post-processor's special tokens. */
  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** Token strings of `text` (for tests and diagnostics). */
  tokenize(text: string): string[] {
    return this.tokenizer.tokenize(text, { add_special_tokens: false });
  }

  /** Id of a token given by string: added tokens first (language codes, `<|bm|>`), then the vocabulary. */
  tokenId(token: string): number | undefined {
    return this.added.get(token) ?? this.tokenizer.token_to_id(token);
  }

  /** Like `tokenId`, with an error that says which token was missing and what it was needed for. */
  requireTokenId(token: string, purpose: string): number {
    const id = this.tokenId(token);
    if (id === undefined) throw new Error(`The tokenizer has no token ${JSON.stringify(token)} (${purpose})`);
    return id;
  }

  /** Every added token, in id order (language codes are found here). */
  addedTokens(): Array<{ id: number; content: string }> {
    return [...this.added].map(([content, id]) => ({ content, id })).sort((a, b) => a.id - b.id);
  }

  idToToken(id: number): string | undefined {
    return this.tokenizer.id_to_token(id);
  }

  /** Text of `ids`: specials skipped, decoder applied (Metaspace `▁` → space), spaces before punctuation cleaned. */
  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean; cleanUpSpaces?: boolean } = {}): string {
    const skip = options.skipSpecialTokens ?? true;
    const kept = skip ? ids.filter((id) => !this.specialIds.has(id)) : [...ids];
    if (kept.length === 0) return '';
    return this.tokenizer.decode(kept, { skip_special_tokens: skip, clean_up_tokenization_spaces: options.cleanUpSpaces ?? this.cleanUpSpaces });
  }
}
