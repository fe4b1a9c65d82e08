/**
 * MP3 output: LAME compiled to WASM (`wasm-media-encoders`), mono, 24 kHz (MPEG-2 Layer III, 576-sample
 * frames), 48 kbps CBR — transparent enough for speech at a fixed, predictable byte rate (6 kB/s), which
 * also keeps the byte count proportional to duration for clients that estimate length from it.
 *
 * Streaming caveats, inherent to MP3 without a seekable output:
 * - No Xing/LAME "Info" tag with the gapless delay/padding can be written (it would need rewriting the
 *   first frame at the end), so decoders play LAME's 1105-sample priming (576 encoder + 529 decoder
 *   delay, ≈46 ms) as leading silence and the last frame's padding as trailing silence.
 * - LAME holds back a frame plus its lookahead before the first bytes; output chunks are not frame
 *   aligned (the bit reservoir), which is fine for a byte stream.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createEncoder as createWasmEncoder, type WasmMediaEncoder } from 'wasm-media-encoders';
import { formatInfo, MP3_BITRATE_KBPS } from '../formats.js';
import type { EncoderOptions, FormatInfo, StreamingEncoder } from '../types.js';
import { streamingEncoderFromCore } from './encoder-lifecycle.js';

export { MP3_BITRATE_KBPS };

let compiled: WebAssembly.Module | undefined;

/**
 * The package's default factory decodes an inlined base64 copy and compiles it on every call (≈15–35 ms).
 * We compile the shipped .wasm file on first use and keep the module (handed back by the library's module
 * callback), leaving ≈3 ms of instantiation per encoder.
 */
async function instantiateLame(): Promise<WasmMediaEncoder<'audio/mpeg'>> {
  if (compiled) return createWasmEncoder('audio/mpeg', compiled);
  const require = createRequire(import.meta.url);
  // The package's export map spells this entry './wasm/mp3' (its './wasm/mp3.wasm' entry points at a typo).
  const bytes = readFileSync(require.resolve('wasm-media-encoders/wasm/mp3'));
  return createWasmEncoder('audio/mpeg', bytes, (module) => {
    compiled = module;
  });
}

/**
 * LAME instances that finished a stream, kept for the next one and already configured for it: a fresh
 * instance allocates and zeroes its WASM memory, and configure() (lame_init_params, 1.4 ms median, up to
 * 4 ms here) re-initialises an old one cleanly (checked: a reused instance encodes byte-identical
 * streams). Both would sit on the path to a client's first bytes; configuring at release instead moves
 * that work to the end of the previous stream — in a burst of 50 mp3 requests, 25 opens per encoder
 * thread had cost ≈ 35 ms before the last stream's first slice.
 */
const ready: Array<WasmMediaEncoder<'audio/mpeg'>> = [];
const MAX_READY = 32;

type Lame = WasmMediaEncoder<'audio/mpeg'>;
type LameParams = Parameters<Lame['configure']>[0];

function configure(lame: Lame, variant?: { info: FormatInfo; bitrate: number }): void {
  // CBR keeps LAME from writing a VBR tag frame at the start.
  if (!variant) return lame.configure({ sampleRate: formatInfo('mp3').sampleRate, channels: 1, bitrate: MP3_BITRATE_KBPS });
  // A variant's output rate is pinned: at a low bitrate LAME would otherwise pick a lower rate of its own.
  const { info, bitrate } = variant;
  lame.configure({ sampleRate: info.sampleRate, channels: 1, bitrate, outputSampleRate: info.sampleRate } as LameParams);
}

export async function createMp3Encoder(options: EncoderOptions): Promise<StreamingEncoder> {
  const info = formatInfo('mp3', options.variant);
  const bitrate = options.variant?.bitrateKbps ?? MP3_BITRATE_KBPS;
  // The ready instances are configured for Kuma's own MP3; another rate or bitrate (an ElevenLabs name)
  // reconfigures one, and it goes back to the list configured for the usual stream.
  const usual = info.sampleRate === formatInfo('mp3').sampleRate && bitrate === MP3_BITRATE_KBPS;
  let lame = ready.pop();
  if (!lame) {
    lame = await instantiateLame();
    if (usual) configure(lame);
  }
  if (!usual) configure(lame, { info, bitrate });
  const instance = lame;
  return streamingEncoderFromCore(info, options, {
    // encode()/finalize() return views into WASM memory that the next call overwrites (and that a
    // memory growth detaches), so copy before handing them out.
    encode: (samples) => instance.encode([samples]).slice(),
    finish: () => instance.finalize().slice(),
    // Reset for the next stream and back to the ready list (whether or not this stream was finished);
    // beyond the list, the WASM instance (and its memory) goes with the last reference.
    release: () => {
      if (ready.length >= MAX_READY || ready.includes(instance)) return;
      configure(instance);
      ready.push(instance);
    },
  });
}
