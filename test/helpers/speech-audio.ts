/**
 * Reading speech a test received back as samples, and transcribing them with the server's own speech model:
 * what the speech route and the speech socket tests check their audio with.
 */
import alawmulaw from 'alawmulaw';
import { decodeAudio } from '../../src/codecs/decode/decode-audio.js';
import { resample } from '../../src/codecs/resample.js';
import type { EngineRegistry } from '../../src/engines/engine-registry.js';

/**
 * Speech bytes in a response format → samples at their rate (and the rate the bytes were encoded at). Raw
 * formats have nothing to detect: read them as what they are (`pcm_<rate>`: the ElevenLabs PCM names).
 */
export async function decodeSpeech(format: string, bytes: Uint8Array): Promise<{ samples: Float32Array; rate: number; sourceRate: number }> {
  const raw = await decodeRaw(format, bytes);
  if (raw) return { ...raw, sourceRate: raw.rate };
  const decoded = await decodeAudio(bytes, { targetRate: 24000 });
  return { samples: decoded.samples, rate: decoded.sampleRate, sourceRate: decoded.sourceSampleRate };
}

async function decodeRaw(format: string, bytes: Uint8Array): Promise<{ samples: Float32Array; rate: number } | null> {
  const s16 = (b: Uint8Array) => Float32Array.from(new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + (b.byteLength & ~1))), (v) => v / 32768);
  const pcmRate = /^pcm_(\d+)$/.exec(format)?.[1];
  if (pcmRate) return { samples: s16(bytes), rate: Number(pcmRate) };
  if (format === 'pcm') return { samples: s16(bytes), rate: 24000 };
  if (format === 'l16_8000') return { samples: s16(bytes), rate: 8000 };
  if (format === 'l16_16000') return { samples: s16(bytes), rate: 16000 };
  if (format === 'ulaw') return { samples: Float32Array.from(alawmulaw.mulaw.decode(bytes), (v) => v / 32768), rate: 8000 };
  if (format === 'alaw') return { samples: Float32Array.from(alawmulaw.alaw.decode(bytes), (v) => v / 32768), rate: 8000 };
  return null;
}

/** The transcript `sunjata-1` (the server's demo CTC model) gives `samples` at `rate`. */
export async function transcribeWith(engines: EngineRegistry, samples: Float32Array, rate: number): Promise<string> {
  const input = rate === 16000 ? samples : await resample(samples, rate, 16000);
  const texts: string[] = [];
  for await (const s of engines.get('sunjata-1')!.stream<{ text: string }>('transcribe', { samples: input })) texts.push(s.text);
  return texts.join(' ');
}
