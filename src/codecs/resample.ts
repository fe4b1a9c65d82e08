/**
 * Band-limited sample-rate conversion for mono Float32 PCM, on the SpeexDSP resampler compiled to WASM
 * (`@echogarden/speex-resampler-wasm`). Used when decoding uploads to the models' rate and by the encoders
 * to reach their format's rate, so it streams: chunks of any size in, what is ready out, and `flush()`
 * drains the filter tail.
 *
 * Two guarantees the raw Speex API does not give, added here:
 * - Alignment: Speex delays its output by half the filter length (its "input latency"). We call
 *   `speex_resampler_skip_zeros` so that output sample j is centred on input time j·in/out, and flush()
 *   feeds that many zeros so the end of the input comes out too.
 * - Length: over a whole stream, the output holds exactly Math.round(totalInput · out / in) samples
 *   (flush() trims or pads the tail), so chunking never changes the length and lengths add up.
 *
 * Measured quality at the default quality 5, every pair among 8000/16000/22050/24000/44100/48000 Hz
 * (test/unit/codecs/resample.test.ts re-checks floors under these): a 1 kHz sine at -6 dBFS comes out
 * with SINAD 108–171 dB (worst 8000→16000, 108 dB: far below 16-bit quantisation); the passband is flat
 * within ±0.001 dB up to 0.8 × the lower Nyquist and −0.5 dB (up) / −1.9 dB (down) at 0.9 ×; a tone at
 * 1.1 × the new Nyquist is attenuated by ≥ 108 dB when downsampling.
 */
export interface StreamingResampler {
  readonly inputRate: number;
  readonly outputRate: number;
  /** Takes any number of samples (0 included) and returns the output that is ready. */
  process(input: Float32Array): Float32Array;
  /**
   * process(), but the output is a view of the resampler's own array, valid only until the next call: for a
   * caller that copies it at once (a realtime session, 50 frames a second), it saves an allocation per call.
   */
  processTransient(input: Float32Array): Float32Array;
  /** Ends the stream: returns the rest of the output. A second call returns nothing; process() then throws. */
  flush(): Float32Array;
  /** Frees the WASM memory. Safe to call at any time, twice. */
  close(): void;
}

/** The parts of the emscripten module we call (it exports more). Pointers are byte offsets into HEAP*. */
interface SpeexModule {
  HEAPU8: Uint8Array;
  HEAPF32: Float32Array;
  HEAPU32: Uint32Array;
  HEAP32: Int32Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  _speex_resampler_init(channels: number, inRate: number, outRate: number, quality: number, errPtr: number): number;
  _speex_resampler_destroy(state: number): void;
  _speex_resampler_skip_zeros(state: number): number;
  _speex_resampler_get_input_latency(state: number): number;
  _speex_resampler_process_float(state: number, channel: number, inPtr: number, inLenPtr: number, outPtr: number, outLenPtr: number): number;
}

type SpeexFactory = (moduleArg?: object) => Promise<SpeexModule>;

/** The package ships no type declarations; importing through a variable keeps tsc from demanding them. */
async function importFactory(specifier: string): Promise<SpeexFactory> {
  const mod = (await import(specifier)) as { default: SpeexFactory };
  return mod.default;
}

/** Samples copied into WASM memory per Speex call; bounds the scratch buffers whatever the chunk size. */
const BLOCK = 4096;

let modulePromise: Promise<SpeexModule> | undefined;

/** One module per thread, loaded on first use: the SIMD build where the runtime has WASM SIMD, else the plain one. */
function loadSpeex(): Promise<SpeexModule> {
  modulePromise ??= (async () => {
    // In Node the emscripten glue reads the .wasm with fs (it only fetches in browsers), so no fetch hiding is needed.
    try {
      return await (
        await importFactory('@echogarden/speex-resampler-wasm/simd')
      )();
    } catch {
      return await (
        await importFactory('@echogarden/speex-resampler-wasm')
      )();
    }
  })();
  modulePromise.catch(() => {
    modulePromise = undefined; // let a later call retry instead of caching the failure
  });
  return modulePromise;
}

function assertRate(name: string, rate: number): void {
  if (!Number.isInteger(rate) || rate <= 0 || rate > 1_000_000) throw new RangeError(`${name} must be a positive integer rate in Hz, got ${rate}`);
}

/** Plain copy: rates are equal, nothing to filter. */
class IdentityResampler implements StreamingResampler {
  constructor(
    readonly inputRate: number,
    readonly outputRate: number,
  ) {}
  process(input: Float32Array): Float32Array {
    return input.slice();
  }
  processTransient(input: Float32Array): Float32Array {
    return input;
  }
  flush(): Float32Array {
    return new Float32Array(0);
  }
  close(): void {}
}

class SpeexStreamingResampler implements StreamingResampler {
  private state: number;
  private readonly inPtr: number;
  private readonly outPtr: number;
  /** Two uint32 in/out counters that Speex reads and overwrites. */
  private readonly lenPtr: number;
  private readonly outCapacity: number;
  private readonly latency: number;
  private totalIn = 0;
  private totalOut = 0;
  private closed = false;
  private flushed = false;
  /** processTransient()'s output, reused from call to call. */
  private transientOut = new Float32Array(0);

  constructor(
    private readonly m: SpeexModule,
    readonly inputRate: number,
    readonly outputRate: number,
    quality: number,
  ) {
    const errPtr = m._malloc(4);
    this.state = m._speex_resampler_init(1, inputRate, outputRate, quality, errPtr);
    const err = m.HEAP32[errPtr >> 2] ?? -1;
    m._free(errPtr);
    if (!this.state || err !== 0) throw new Error(`speex_resampler_init(${inputRate}→${outputRate}, q${quality}) failed with code ${err}`);
    m._speex_resampler_skip_zeros(this.state);
    this.latency = m._speex_resampler_get_input_latency(this.state);
    // Enough room for one block's output at the highest ratio, plus slack for the fractional phase.
    this.outCapacity = Math.ceil((BLOCK * outputRate) / inputRate) + 16;
    this.inPtr = m._malloc(BLOCK * 4);
    this.outPtr = m._malloc(this.outCapacity * 4);
    this.lenPtr = m._malloc(8);
  }

  process(input: Float32Array): Float32Array {
    if (this.closed) throw new Error('resampler is closed');
    if (this.flushed) throw new Error('resampler was flushed: the stream has ended');
    this.totalIn += input.length;
    return this.run(input);
  }

  processTransient(input: Float32Array): Float32Array {
    if (this.closed) throw new Error('resampler is closed');
    if (this.flushed) throw new Error('resampler was flushed: the stream has ended');
    this.totalIn += input.length;
    return this.run(input, true);
  }

  flush(): Float32Array {
    if (this.closed) throw new Error('resampler is closed');
    if (this.flushed) return new Float32Array(0);
    this.flushed = true;
    const target = Math.round((this.totalIn * this.outputRate) / this.inputRate);
    // Zeros push the last real samples through the filter's look-ahead (its input latency).
    const parts: Float32Array[] = [this.run(new Float32Array(this.latency + 2))];
    let produced = parts[0]!.length;
    while (this.totalOut < target) {
      const more = this.run(new Float32Array(BLOCK));
      parts.push(more);
      produced += more.length;
    }
    const tail = concat(parts, produced);
    // totalOut counted everything Speex produced; keep only what the length rule allows.
    const excess = this.totalOut - target;
    this.totalOut = target;
    return tail.subarray(0, Math.max(0, tail.length - excess)).slice();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.m._speex_resampler_destroy(this.state);
    this.state = 0;
    this.m._free(this.inPtr);
    this.m._free(this.outPtr);
    this.m._free(this.lenPtr);
  }

  /** Feeds `input` through Speex block by block and returns everything it produced. */
  private run(input: Float32Array, transient = false): Float32Array {
    const m = this.m;
    const parts: Float32Array[] = [];
    let produced = 0;
    let offset = 0;
    while (offset < input.length) {
      const n = Math.min(BLOCK, input.length - offset);
      // HEAP views are re-read on every use: WASM memory growth replaces them.
      m.HEAPF32.set(input.subarray(offset, offset + n), this.inPtr >> 2);
      let consumed = 0;
      while (consumed < n) {
        m.HEAPU32[this.lenPtr >> 2] = n - consumed;
        m.HEAPU32[(this.lenPtr >> 2) + 1] = this.outCapacity;
        const err = m._speex_resampler_process_float(this.state, 0, this.inPtr + consumed * 4, this.lenPtr, this.outPtr, this.lenPtr + 4);
        if (err !== 0) throw new Error(`speex_resampler_process_float failed with code ${err}`);
        const used = m.HEAPU32[this.lenPtr >> 2] ?? 0;
        const written = m.HEAPU32[(this.lenPtr >> 2) + 1] ?? 0;
        if (written > 0) {
          const output = m.HEAPF32.subarray(this.outPtr >> 2, (this.outPtr >> 2) + written);
          if (transient) this.keepTransient(output, produced);
          else parts.push(output.slice());
          produced += written;
        }
        if (used === 0 && written === 0) throw new Error('speex resampler made no progress');
        consumed += used;
      }
      offset += n;
    }
    this.totalOut += produced;
    return transient ? this.transientOut.subarray(0, produced) : concat(parts, produced);
  }

  /** Appends `output` at `at` in the reused transient array, growing it (keeping what is there) when needed. */
  private keepTransient(output: Float32Array, at: number): void {
    if (this.transientOut.length < at + output.length) {
      const grown = new Float32Array(Math.max(2 * this.transientOut.length, at + output.length, 1024));
      grown.set(this.transientOut.subarray(0, at));
      this.transientOut = grown;
    }
    this.transientOut.set(output, at);
  }
}

function concat(parts: Float32Array[], length: number): Float32Array {
  if (parts.length === 1 && parts[0]!.length === length) return parts[0]!;
  const out = new Float32Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A streaming resampler from `inputRate` to `outputRate` (integers in Hz). Quality 0–10 as in Speex
 * (5 = its "VoIP/default"); equal rates give a copying identity. Call close() to free WASM memory.
 */
export async function createResampler(inputRate: number, outputRate: number, quality = 5): Promise<StreamingResampler> {
  assertRate('inputRate', inputRate);
  assertRate('outputRate', outputRate);
  if (!Number.isInteger(quality) || quality < 0 || quality > 10) throw new RangeError(`quality must be an integer 0–10, got ${quality}`);
  if (inputRate === outputRate) return new IdentityResampler(inputRate, outputRate);
  return new SpeexStreamingResampler(await loadSpeex(), inputRate, outputRate, quality);
}

/** Resamples a whole buffer; the result has Math.round(samples.length · out / in) samples. */
export async function resample(samples: Float32Array, inputRate: number, outputRate: number): Promise<Float32Array> {
  const r = await createResampler(inputRate, outputRate);
  try {
    const head = r.process(samples);
    const tail = r.flush();
    return concat([head, tail], head.length + tail.length);
  } finally {
    r.close();
  }
}

/** Size of this thread's Speex WASM heap in bytes (diagnostics and leak tests; it only ever grows). */
export async function resamplerHeapBytes(): Promise<number> {
  return (await loadSpeex()).HEAPU8.length;
}
