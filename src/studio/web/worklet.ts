/**
 * The page's audio worklets, one module (loaded with audioWorklet.addModule from this origin):
 * - `kuma-capture`: microphone samples → 20 ms frames of 24 kHz pcm16, posted to the page (the realtime
 *   session's input format). Resamples linearly when the context does not run at 24 kHz.
 * - `kuma-playback`: plays float samples the page posts as they stream in, and tells the page when sound
 *   first went out and when the queue ran dry after the last chunk.
 */

// The AudioWorkletGlobalScope, which the DOM library does not describe.
declare const sampleRate: number;
declare function registerProcessor(name: string, processor: new () => AudioWorkletProcessorBase): void;
declare class AudioWorkletProcessorBase {
  readonly port: MessagePort;
}
const Processor = (globalThis as unknown as { AudioWorkletProcessor: typeof AudioWorkletProcessorBase }).AudioWorkletProcessor;

const TARGET_RATE = 24_000;
const FRAME_SAMPLES = 480; // 20 ms at 24 kHz

class CaptureProcessor extends Processor {
  private readonly step = sampleRate / TARGET_RATE;
  /** Position of the next output sample, in input samples relative to the current block. */
  private position = 0;
  private previous = 0;
  private frame = new Int16Array(FRAME_SAMPLES);
  private filled = 0;

  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (!channel || channel.length === 0) return true;
    // Output sample positions are in input samples of this block; -1 is the last sample of the previous
    // one, so interpolation runs across block edges. At 24 kHz the step is 1 and samples pass unchanged.
    const at = (i: number) => (i < 0 ? this.previous : channel[i]!);
    while (this.position + 1 < channel.length) {
      const index = Math.floor(this.position);
      const fraction = this.position - index;
      const a = at(index);
      this.push(a + (at(index + 1) - a) * fraction);
      this.position += this.step;
    }
    this.position -= channel.length;
    this.previous = channel[channel.length - 1]!;
    return true;
  }

  private push(sample: number): void {
    const clamped = Math.max(-1, Math.min(1, sample));
    this.frame[this.filled++] = Math.round(clamped < 0 ? clamped * 0x8000 : clamped * 0x7fff);
    if (this.filled === FRAME_SAMPLES) {
      this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
      this.frame = new Int16Array(FRAME_SAMPLES);
      this.filled = 0;
    }
  }
}

class PlaybackProcessor extends Processor {
  private readonly queue: Float32Array[] = [];
  private offset = 0;
  private started = false;
  private ended = false;

  constructor() {
    super();
    this.port.onmessage = (event: MessageEvent<Float32Array | 'end'>) => {
      if (event.data === 'end') this.ended = true;
      else this.queue.push(event.data);
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const out = outputs[0]?.[0];
    if (!out) return true;
    let written = 0;
    while (written < out.length && this.queue.length > 0) {
      const head = this.queue[0]!;
      const count = Math.min(out.length - written, head.length - this.offset);
      out.set(head.subarray(this.offset, this.offset + count), written);
      written += count;
      this.offset += count;
      if (this.offset === head.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    out.fill(0, written);
    if (written > 0 && !this.started) {
      this.started = true;
      this.port.postMessage('playing');
    }
    if (this.ended && this.queue.length === 0) {
      this.port.postMessage('ended');
      return false;
    }
    return true;
  }
}

registerProcessor('kuma-capture', CaptureProcessor);
registerProcessor('kuma-playback', PlaybackProcessor);
