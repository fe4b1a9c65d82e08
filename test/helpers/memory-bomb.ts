/**
 * A real, valid-looking M4A whose decoding needs memory far beyond its size — built to test decoder
 * containment (issue 16), not with a test hook but with bytes a client could send.
 *
 * How: `seconds` of 48 kHz stereo AAC at 24 kbit/s (one second encoded, its ADTS frames repeated, then
 * remuxed by ffmpeg without re-encoding: ffmpeg's MP4 muxer puts the index, `moov`, after the media),
 * and an empty `mvex` box appended inside the moov. Every declared size and count is honest, so the MP4
 * guards pass it. But the decoder path cannot move an index that has an `mvex` to the front
 * (mp4-faststart.ts leaves fragmented files alone), so the demuxer is fed the whole file in one call and
 * decodes all of it at once: 1,200 s (4.3 MB) expand to ≈ 1.3 GB of resident memory in the decoder.
 */
import { runFfmpeg } from '../unit/codecs/helpers/ffmpeg.js';
import { stereoSpeechLike } from '../unit/codecs/helpers/signals.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export async function memoryBombM4a(seconds = 1200): Promise<Buffer> {
  const [left, right] = stereoSpeechLike(48000, 1);
  const interleaved = new Float32Array(left.length * 2);
  for (let i = 0; i < left.length; i++) {
    interleaved[2 * i] = left[i]!;
    interleaved[2 * i + 1] = right[i]!;
  }
  const second = await runFfmpeg(
    ['-f', 'f32le', '-ar', '48000', '-ac', '2', '-i', 'pipe:0', '-c:a', 'aac', '-b:a', '24k', '-f', 'adts', 'pipe:1'],
    new Uint8Array(interleaved.buffer),
  );
  const adts = Buffer.alloc(second.length * seconds);
  for (let i = 0; i < seconds; i++) second.copy(adts, i * second.length);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-bomb-'));
  try {
    writeFileSync(path.join(dir, 'in.aac'), adts);
    await runFfmpeg(['-y', '-f', 'aac', '-i', path.join(dir, 'in.aac'), '-c', 'copy', '-f', 'mp4', path.join(dir, 'out.m4a')]);
    return withEmptyMvex(readFileSync(path.join(dir, 'out.m4a')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The file with an 8-byte empty `mvex` box appended to its moov, which must be the last top-level box. */
function withEmptyMvex(m4a: Buffer): Buffer {
  let at = 0;
  let moovAt = -1;
  while (at + 8 <= m4a.length) {
    if (m4a.toString('latin1', at + 4, at + 8) === 'moov') moovAt = at;
    at += m4a.readUInt32BE(at);
  }
  if (moovAt < 0 || moovAt + m4a.readUInt32BE(moovAt) !== m4a.length) throw new Error('expected the moov to be the last box');
  const out = Buffer.alloc(m4a.length + 8);
  m4a.copy(out);
  out.writeUInt32BE(m4a.readUInt32BE(moovAt) + 8, moovAt);
  out.writeUInt32BE(8, m4a.length);
  out.write('mvex', m4a.length + 4, 'latin1');
  return out;
}
