/** Test audio: demo-voice speech with known symbol positions, as WAV bytes a client would upload. */
import { speakDemo } from '../../models/generator/demo-voice.js';

/** 16-bit PCM mono WAV. */
export function wavBytes(samples: Float32Array, rate: number): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return wavOfPcm16(data, rate);
}

/** A mono 16-bit PCM WAV file around `pcm` (little-endian samples at `rate`), the samples kept as they are. */
export function wavOfPcm16(pcm: Buffer, rate: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

export interface SpokenPhrase {
  text: string;
  start: number;
  end: number;
}

/** Phrases of demo speech separated by `pauseSeconds` of silence; returns the audio and each phrase's span. */
export function spokenPhrases(phrases: string[], rate = 16000, pauseSeconds = 1): { samples: Float32Array; spans: SpokenPhrase[]; seconds: number } {
  const parts: Float32Array[] = [];
  const spans: SpokenPhrase[] = [];
  let at = 0;
  phrases.forEach((text, i) => {
    if (i > 0) {
      parts.push(new Float32Array(Math.round(pauseSeconds * rate)));
      at += pauseSeconds;
    }
    const spoken = speakDemo(text, rate);
    spans.push({ text, start: at + spoken.symbols[0]!.start, end: at + spoken.symbols.at(-1)!.end });
    parts.push(spoken.samples);
    at += spoken.samples.length / rate;
  });
  const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) (samples.set(p, offset), (offset += p.length));
  return { samples, spans, seconds: samples.length / rate };
}
