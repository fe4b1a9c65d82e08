/**
 * Moves an MP4's index (`moov`) in front of its media data (`mdat`), as `qt-faststart` and ffmpeg's
 * `-movflags +faststart` do, without copying the media: the result is a list of byte pieces to feed the
 * decoder in order, sharing memory with the upload except for the rewritten moov.
 *
 * Why: audio-decode's MP4 demuxer can only read samples once it has the whole moov. Fed a file whose moov
 * comes last (ffmpeg's default, many phone recorders), it holds every byte until the end and then decodes
 * the whole file in one call — memory proportional to the duration. With the moov first it decodes the
 * media as it arrives, so the upload can be decoded in bounded windows.
 *
 * Moving the moov shifts the media before it by the moov's size, so every chunk offset (`stco`, 32-bit;
 * `co64`, 64-bit) that points into the shifted range is rewritten. Fragmented files (`mvex` in the moov)
 * address samples from their own `moof` boxes and are left as they are, as are files this cannot rewrite
 * (no moov, a cut moov, a 32-bit offset that would overflow): the caller feeds those whole.
 */
import { boxes, type Box } from './container-probe.js';

const u32 = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const setU32 = (b: Uint8Array, at: number, v: number): void => {
  b[at] = v >>> 24;
  b[at + 1] = (v >>> 16) & 0xff;
  b[at + 2] = (v >>> 8) & 0xff;
  b[at + 3] = v & 0xff;
};

/** Boxes on the path moov → trak → mdia → minf → stbl, the only place chunk offset tables live. */
const PATH = new Set(['trak', 'mdia', 'minf', 'stbl']);

/** Every stco/co64 box inside the (copied) moov `m`, whose own header starts at 0. */
function offsetTables(m: Uint8Array, from: number, to: number, out: Box[] = []): Box[] {
  for (const box of boxes(m, from, to)) {
    if (box.end > to) break;
    if (box.type === 'stco' || box.type === 'co64') out.push(box);
    else if (PATH.has(box.type)) offsetTables(m, box.body, box.end, out);
  }
  return out;
}

/**
 * Rewrites the chunk offsets in `m` (a copy of the moov) that fall in [from, to) by adding `shift`.
 * Returns false when an entry table runs past its box or a 32-bit offset would overflow.
 */
function shiftOffsets(m: Uint8Array, from: number, to: number, shift: number): boolean {
  const moov = boxes(m, 0, m.length)[0]!;
  for (const table of offsetTables(m, moov.body, m.length)) {
    const wide = table.type === 'co64';
    const count = table.body + 8 <= table.end ? u32(m, table.body + 4) : 0;
    const entries = table.body + 8;
    if (entries + count * (wide ? 8 : 4) > table.end) return false;
    for (let i = 0; i < count; i++) {
      const at = entries + i * (wide ? 8 : 4);
      const offset = wide ? u32(m, at) * 2 ** 32 + u32(m, at + 4) : u32(m, at);
      if (offset < from || offset >= to) continue;
      const moved = offset + shift;
      if (wide) {
        setU32(m, at, Math.floor(moved / 2 ** 32));
        setU32(m, at + 4, moved % 2 ** 32);
      } else {
        if (moved > 0xffffffff) return false;
        setU32(m, at, moved);
      }
    }
  }
  return true;
}

/**
 * The file as pieces with the moov in front of the first mdat — the first piece is everything up to the
 * end of the moov (a copy), the others share the upload's memory — or undefined when the moov already
 * comes first or the file is one this does not rewrite (see the header).
 */
export function moovFirst(bytes: Uint8Array): Uint8Array[] | undefined {
  const top = boxes(bytes, 0, bytes.length);
  const moov = top.find((b) => b.type === 'moov');
  const mdat = top.find((b) => b.type === 'mdat');
  if (!moov || !mdat || moov.at < mdat.at || moov.end > bytes.length) return undefined;
  const copy = bytes.slice(moov.at, moov.end);
  if (boxes(copy, moov.body - moov.at, copy.length).some((b) => b.type === 'mvex')) return undefined;
  // Media between the first mdat and the moov moves later by the moov's size; media after the moov stays.
  if (!shiftOffsets(copy, mdat.at, moov.at, copy.length)) return undefined;
  const head = new Uint8Array(mdat.at + copy.length);
  head.set(bytes.subarray(0, mdat.at));
  head.set(copy, mdat.at);
  return [head, bytes.subarray(mdat.at, moov.at), bytes.subarray(moov.end)].filter((p) => p.length > 0);
}
