/**
 * Random values for the fuzz's structured targets: JSON values of every type (strings with control
 * characters, lone surrogates, emoji and scripts the voices lack; numbers at the edges; nesting),
 * and the few kinds of text a speech or translation route treats specially.
 */
import { EDGE_INTS, type Rng } from './rng.js';

const ALPHABET = "abcdefghijklmnoprstuwyzɛɔɲŋ ABCƐƆ0123456789.,'’-";
const ODD = [
  '\u0000',
  '\u0007',
  '\n',
  '\r\n',
  '\t',
  '\u200b',
  '\u00ad',
  '\ufeff',
  '\ud800',
  '\udfff',
  '😀',
  'é',
  'ɛ̀',
  '€',
  '"',
  '\\',
  '/',
  '<script>',
  '%s',
  '${x}',
  '\u202e',
  'ñ',
  '中',
  'ض',
];

/** Text a demo voice can say (mostly) or almost: its letters, digits, punctuation, and now and then an odd character. */
export function speechText(rng: Rng, max = 60): string {
  let s = '';
  const n = rng.int(0, max);
  for (let i = 0; i < n; i++) s += rng.chance(0.03) ? rng.pick(ODD) : ALPHABET[rng.int(0, ALPHABET.length - 1)]!;
  return s;
}

export function randomString(rng: Rng): string {
  switch (rng.int(0, 5)) {
    case 0:
      return '';
    case 1:
      return speechText(rng);
    case 2:
      return Array.from({ length: rng.int(1, 8) }, () => rng.pick(ODD)).join('');
    case 3:
      return String.fromCharCode(...Array.from({ length: rng.int(1, 40) }, () => rng.int(0, 0xffff)));
    case 4:
      // '¤' and not a letter: every voice refuses it at once (a speech socket would otherwise speak 5,000 of them
      // before answering the probe that follows, which is in order, not a hang).
      return '¤'.repeat(rng.pick([100, 1000, 5000, 20_000])); // at most 4 of these per object, 3 deep: < 2.6 MB
    default:
      return rng.pick([
        'sunjata-1',
        'jifili-1',
        'banjugu-1',
        'whisper-1',
        'tts-1',
        'moussa',
        'json',
        'text',
        'pcm',
        'mp3',
        'sse',
        'bam_Latn',
        'fra_Latn',
        'eng_Latn',
        'user',
        'system',
        'true',
        '1',
        'null',
      ]);
  }
}

export function randomNumber(rng: Rng): number {
  return rng.chance(0.6) ? rng.pick(EDGE_INTS) : (rng.next() - 0.5) * 10 ** rng.int(0, 12);
}

/** Any JSON value, nested at most `depth` deep (and once in a while much deeper). */
export function randomJson(rng: Rng, depth = 3): unknown {
  const kind = rng.int(0, depth > 0 ? 7 : 4);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return randomNumber(rng);
    case 3:
    case 4:
      return randomString(rng);
    case 5:
      if (rng.chance(0.05)) return nested(rng.int(10, 60));
      if (rng.chance(0.05)) return Array.from({ length: rng.int(100, 20_000) }, () => rng.int(0, 9)); // long, but of small items: bodies stay near the JSON limit
      return Array.from({ length: rng.int(0, 4) }, () => randomJson(rng, depth - 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = rng.int(0, 4); i > 0; i--)
        o[rng.chance(0.2) ? rng.pick(['__proto__', 'constructor', 'toString', '']) : randomString(rng).slice(0, 20)] = randomJson(rng, depth - 1);
      return o;
    }
  }
}

function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

/**
 * Structure-aware damage of a protocol message (a JSON object, nested): `n` times, one value somewhere in
 * the tree is replaced by any JSON value, removed, or given a sibling of any name. Mutates in place.
 */
export function mutateTree(rng: Rng, message: Record<string, unknown>, n: number): Record<string, unknown> {
  for (; n > 0; n--) {
    // Walk down a random path of objects, stopping at random.
    let node: Record<string, unknown> = message;
    for (let depth = 0; depth < 4 && rng.chance(0.6); depth++) {
      const children = Object.keys(node).filter((k) => typeof node[k] === 'object' && node[k] !== null && !Array.isArray(node[k]));
      if (!children.length) break;
      node = node[rng.pick(children)] as Record<string, unknown>;
    }
    const keys = Object.keys(node);
    const which = rng.int(0, 2);
    if (which === 0 && keys.length) node[rng.pick(keys)] = randomJson(rng, 2);
    else if (which === 1 && keys.length) delete node[rng.pick(keys)];
    else
      node[rng.chance(0.5) ? randomString(rng).slice(0, 20) : rng.pick(['type', 'event', 'event_id', 'audio', 'text', 'session', 'media', 'start'])] =
        randomJson(rng, 2);
  }
  return message;
}

/** Base64 for an audio field: valid (of random bytes, `bytes` long), or not base64 in one of the ways decoders get wrong. */
export function audioBase64(rng: Rng, bytes: number): string {
  const valid = Buffer.from(rng.bytes(bytes)).toString('base64');
  if (rng.chance(0.85)) return valid;
  return rng.pick([
    `${valid}A`, // length not a multiple of 4
    `${valid.slice(0, -4)}!@#$`, // characters outside the alphabet
    `==${valid.slice(2)}`, // padding first
    valid.replace(/[A-Z]/g, '-'), // the URL-safe alphabet (decodes: accepted)
    ' '.repeat(8),
    '',
  ]);
}

/** Any string as a URL component; lone surrogates (which encodeURIComponent refuses) become U+FFFD. */
export function urlPart(s: string): string {
  return encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}
