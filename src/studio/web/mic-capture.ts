/**
 * The microphone as 20 ms frames of 24 kHz pcm16 (the realtime session's `audio/pcm` input): getUserMedia
 * without the browser's voice processing (echo cancellation, noise suppression and gain control reshape the
 * signal the recognizer was trained on), an AudioContext at 24 kHz where the browser allows it, and the
 * `kuma-capture` worklet, which converts (and resamples if needed) off the main thread.
 */
import { pageSetting } from './dom.js';

export class MicCapture {
  private constructor(
    private readonly stream: MediaStream,
    private readonly context: AudioContext,
    private readonly node: AudioWorkletNode,
  ) {}

  /** Asks for the microphone; `onFrame` receives each 20 ms frame (960 bytes of little-endian pcm16). */
  static async start(onFrame: (frame: ArrayBuffer) => void): Promise<MicCapture> {
    if (!navigator.mediaDevices?.getUserMedia) throw new Error('This browser cannot capture audio here (the page needs HTTPS or localhost).');
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
      });
    } catch (error) {
      const name = (error as DOMException).name;
      throw new Error(
        name === 'NotAllowedError' ? 'Microphone access was refused: allow it in the browser, then start again.' : `No microphone could be opened (${name}).`,
      );
    }
    let context: AudioContext;
    try {
      context = new AudioContext({ sampleRate: 24_000 });
    } catch {
      context = new AudioContext(); // the worklet resamples to 24 kHz
    }
    try {
      await context.audioWorklet.addModule(pageSetting('worklet'));
      const node = new AudioWorkletNode(context, 'kuma-capture', { numberOfInputs: 1, numberOfOutputs: 0, channelCount: 1, channelCountMode: 'explicit' });
      node.port.onmessage = (event: MessageEvent<ArrayBuffer>) => onFrame(event.data);
      context.createMediaStreamSource(stream).connect(node);
      await context.resume();
      return new MicCapture(stream, context, node);
    } catch (error) {
      for (const track of stream.getTracks()) track.stop();
      void context.close();
      throw error;
    }
  }

  stop(): void {
    this.node.port.onmessage = null;
    for (const track of this.stream.getTracks()) track.stop();
    void this.context.close();
  }
}

/** Bytes → base64, in slices (String.fromCharCode(...all) overflows the stack on long buffers). */
export function toBase64(bytes: ArrayBuffer): string {
  const view = new Uint8Array(bytes);
  let text = '';
  for (let i = 0; i < view.length; i += 0x8000) text += String.fromCharCode(...view.subarray(i, i + 0x8000));
  return btoa(text);
}
