/**
 * The sentencepiece `nmt_nfkc` normaliser of NLLB's tokenizer.json, as a real `precompiled_charsmap` (the
 * demo and real-size tokenizers' Precompiled normaliser), and the approximation the JS runtime applies.
 */

/** nmt_nfkc as the JS runtime approximates it: drop controls, odd spaces → space, then NFKC. */
export function nmtNfkc(text: string): string {
  return text
    .replace(/[\u0001-\u0008\u000B\u000E-\u001F\u007F\u008F\u009F]/g, '')
    .replace(/[\u0009\u000A\u000C\u000D\u00A0\u1680\u2000-\u200F\u2028\u2029\u202F\u205F\u2581\u3000\uFEFF\uFFFD]/g, ' ')
    .normalize('NFKC');
}

/**
 * Code points the charsmap covers: Latin, IPA, combining marks, Greek/Cyrillic, Latin Extended Additional,
 * punctuation, super/subscripts, letterlike and number forms, ligatures, small and fullwidth forms. These
 * mappings are fixed by Unicode's normalisation stability policy, so the bytes do not drift with Node's ICU.
 */
const CHARSMAP_RANGES: Array<[number, number]> = [
  [0x0001, 0x05ff],
  [0x1680, 0x1680],
  [0x1d00, 0x1fff],
  [0x2000, 0x2bff],
  [0x3000, 0x3000],
  [0xfb00, 0xfb4f],
  [0xfe00, 0xfe6f],
  [0xfeff, 0xfeff],
  [0xff00, 0xffef],
  [0xfffd, 0xfffd],
];

/**
 * A real sentencepiece `precompiled_charsmap`: u32 trie size in bytes, a darts-clone double-array trie over
 * the UTF-8 bytes of each source string, then the NUL-terminated replacement strings the trie's values point
 * into. Keys: every covered code point that nmt_nfkc changes, and the NFD spelling of every covered
 * precomposed character (so "e\u0301" composes to "é", as nmt_nfkc does).
 */
let charsmapCache: Uint8Array | undefined;

export function precompiledCharsmap(): Uint8Array {
  charsmapCache ??= buildCharsmap();
  return charsmapCache;
}

function buildCharsmap(): Uint8Array {
  const mapping = new Map<string, string>();
  for (const [from, to] of CHARSMAP_RANGES) {
    for (let cp = from; cp <= to; cp++) {
      const char = String.fromCodePoint(cp);
      const normalized = nmtNfkc(char);
      if (normalized !== char) mapping.set(char, normalized);
      const decomposed = char.normalize('NFD');
      if (decomposed !== char && nmtNfkc(decomposed) !== decomposed) mapping.set(decomposed, nmtNfkc(decomposed));
    }
  }
  const encoder = new TextEncoder();
  const keys = [...mapping.keys()].sort();
  // Replacement strings, deduplicated, NUL-terminated; values are byte offsets into this blob.
  const blobParts: Uint8Array[] = [];
  const offsets = new Map<string, number>();
  let blobLength = 0;
  for (const key of keys) {
    const value = mapping.get(key)!;
    if (offsets.has(value)) continue;
    offsets.set(value, blobLength);
    const bytes = encoder.encode(`${value}\0`);
    blobParts.push(bytes);
    blobLength += bytes.length;
  }
  const units = buildDoubleArray(keys.map((key) => ({ bytes: encoder.encode(key), value: offsets.get(mapping.get(key)!)! })));
  const out = new Uint8Array(4 + units.length * 4 + blobLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, units.length * 4, true);
  units.forEach((unit, i) => view.setUint32(4 + i * 4, unit, true));
  let at = 4 + units.length * 4;
  for (const part of blobParts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

interface TrieNode {
  children: Map<number, TrieNode>;
  value: number | undefined;
}

/**
 * darts-clone units as sentencepiece reads them: label in bits 0–7, has-leaf in bit 8, offset (to the
 * children's base, XOR-relative to the unit's own position) in bits 10–30; a leaf unit at the node's base
 * holds the value with bit 31 set. Bases are unique, so a label can never match from a foreign parent.
 */
function buildDoubleArray(entries: Array<{ bytes: Uint8Array; value: number }>): number[] {
  const root: TrieNode = { children: new Map(), value: undefined };
  for (const { bytes, value } of entries) {
    let node = root;
    for (const byte of bytes) {
      let child = node.children.get(byte);
      if (!child) node.children.set(byte, (child = { children: new Map(), value: undefined }));
      node = child;
    }
    node.value = value;
  }
  const units: number[] = [0];
  const used = new Set<number>([0]);
  const usedBases = new Set<number>();
  let searchFrom = 256;
  const queue: Array<{ node: TrieNode; pos: number; label: number }> = [{ node: root, pos: 0, label: 0 }];
  for (let q = 0; q < queue.length; q++) {
    const { node, pos, label } = queue[q]!;
    const labels = [...node.children.keys()].sort((a, b) => a - b);
    const slots = node.value !== undefined ? [0, ...labels] : labels;
    let base = searchFrom;
    while (usedBases.has(base) || slots.some((s) => used.has(base ^ s))) base++;
    while (used.has(searchFrom)) searchFrom++;
    usedBases.add(base);
    const offset = base ^ pos;
    if (offset >= 1 << 21) throw new Error('charsmap trie too large for plain offsets');
    units[pos] = ((offset << 10) | (node.value !== undefined ? 1 << 8 : 0) | label) >>> 0;
    for (const s of slots) used.add(base ^ s);
    if (node.value !== undefined) units[base] = (node.value | 0x80000000) >>> 0;
    for (const l of labels) queue.push({ node: node.children.get(l)!, pos: base ^ l, label: l });
  }
  // Any base XOR any byte must stay inside the array: pad to the end of the last 256-unit block.
  const length = (Math.max(...units.keys()) | 0xff) + 1;
  return Array.from({ length }, (_, i) => units[i] ?? 0);
}
