/**
 * The demo voice: the sound of each symbol of the demo alphabet, shared by the demo TTS models (which
 * speak it) and the demo ASR models (which are built to recognise it). Each symbol is a short synthetic
 * vowel: a harmonic series with a gliding, slightly vibrating pitch, shaped by two formants whose pair
 * (F1, F2) is unique to the symbol. Pure tones would be simpler to recognise, but Silero VAD scores them
 * as non-speech (measured: ≈0.00), while these vowels score ≈0.4–0.9 per 32 ms window, so the same audio
 * also exercises voice-activity detection. Deterministic: no randomness.
 */

/** The Bambara alphabet (with ɛ ɔ ɲ ŋ) plus the space; index = position. */
export const DEMO_SYMBOLS: readonly string[] = [...'abcdeɛfghijklmnɲŋoɔprstuwyz', ' '];

/** Length of a spoken symbol, and of the silence the VITS blank token (id 0) stands for. */
export const DEMO_SYMBOL_SECONDS = 0.1;
export const DEMO_GAP_SECONDS = 0.05;

const F1_VALUES = [300, 450, 600, 750, 900, 1050, 1200];
const F2_VALUES = [1400, 2000, 2600, 3200];

export function symbolIndex(symbol: string): number {
  return DEMO_SYMBOLS.indexOf(symbol);
}

/** The formant pair that identifies a symbol: 7 × 4 = 28 distinct pairs for 28 symbols. */
export function formantsOf(index: number): { f1: number; f2: number } {
  if (index < 0 || index >= DEMO_SYMBOLS.length) throw new RangeError(`No demo symbol ${index}`);
  return { f1: F1_VALUES[index % F1_VALUES.length]!, f2: F2_VALUES[Math.floor(index / F1_VALUES.length)]! };
}

/**
 * Renders one symbol at `sampleRate`: `DEMO_SYMBOL_SECONDS` long, 15 ms fades, peak amplitude below 0.9.
 * Harmonics stop below min(7.5 kHz, Nyquist) so every rate from 16 kHz up renders the same content.
 */
export function renderSymbol(index: number, sampleRate: number): Float32Array {
  const { f1, f2 } = formantsOf(index);
  const length = Math.round(DEMO_SYMBOL_SECONDS * sampleRate);
  const fade = 0.015 * sampleRate;
  const glide = index % 2 === 0 ? 30 : -30; // rising or falling pitch, as in running speech
  const ceiling = Math.min(7500, sampleRate / 2 - 200);
  const out = new Float32Array(length);
  let phase = 0;
  for (let j = 0; j < length; j++) {
    const f0 = 115 + glide * (j / length - 0.5) + 6 * Math.sin((2 * Math.PI * 5 * j) / sampleRate);
    phase += f0 / sampleRate;
    let value = 0;
    for (let h = 1; h * f0 < ceiling; h++) {
      const fh = h * f0;
      const amplitude = Math.exp(-(((fh - f1) / 90) ** 2)) + 0.7 * Math.exp(-(((fh - f2) / 150) ** 2)) + 0.08 / h;
      value += amplitude * Math.sin(2 * Math.PI * h * phase);
    }
    const envelope = Math.min(1, j / fade, (length - 1 - j) / fade);
    out[j] = 0.2 * envelope * value;
  }
  return out;
}

/**
 * Speaks a text in the demo voice: each known symbol followed by a gap; unknown characters are skipped
 * (the same normalisation the demo TTS applies). Used by tests and load tests to make known speech.
 */
export function speakDemo(text: string, sampleRate: number): { samples: Float32Array; symbols: Array<{ symbol: string; start: number; end: number }> } {
  const gap = Math.round(DEMO_GAP_SECONDS * sampleRate);
  const symbolLength = Math.round(DEMO_SYMBOL_SECONDS * sampleRate);
  const indices = [...text.toLowerCase()].map(symbolIndex).filter((i) => i >= 0);
  const samples = new Float32Array(gap + indices.length * (symbolLength + gap));
  const symbols: Array<{ symbol: string; start: number; end: number }> = [];
  let offset = gap;
  for (const index of indices) {
    samples.set(renderSymbol(index, sampleRate), offset);
    symbols.push({ symbol: DEMO_SYMBOLS[index]!, start: offset / sampleRate, end: (offset + symbolLength) / sampleRate });
    offset += symbolLength + gap;
  }
  return { samples, symbols };
}
