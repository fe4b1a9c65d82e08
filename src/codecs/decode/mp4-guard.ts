/**
 * Checks an MP4's box sizes and sample tables before audio-decode's MP4 demuxer sees them.
 *
 * Why: that demuxer (JavaScript) allocates and loops by the entry counts the file declares — `stsz` does
 * `new Array(count).fill(size)`; `stco`/`co64`/`stsc`/`trun`, and the edit-list code (`elst`, `stts`)
 * it borrows from @audio/decode-aac, loop `count` times — without checking them against the bytes that
 * hold them. A 5 KB upload declaring 4 billion entries runs V8 out of memory, and V8's out-of-memory is
 * fatal to the whole process even inside a worker thread (found by the fuzz in
 * test/unit/codecs/decode-bad-input.test.ts; worker `resourceLimits` did not contain it on Node 20).
 *
 * How: rather than re-implement the demuxer's box walk (it has its own quirks, e.g. 64-bit sizes), every
 * place in the file where one of those box types could be parsed is checked: the 4-byte type, preceded
 * by a size the demuxer would accept (0, 1, or 8 up to the end of the file). Its count must fit in the
 * bytes from there to the end of the file. Random audio bytes rarely look like that (about 3 in 100 000
 * files of 10 MB), and a file that does is refused as corrupt, never crashes the server.
 */

/** Big-endian u32 reading zeros past the end, as the demuxer does (a cut field can only read smaller). */
const u32 = (b: Uint8Array, at: number): number => (((b[at] ?? 0) << 24) | ((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0)) >>> 0;

const bitCount = (n: number): number => {
  let c = 0;
  for (let v = n; v; v &= v - 1) c++;
  return c;
};

/** [header bytes before the table, bytes per entry]; 0 per entry = no table (one sample size for all). */
function tableLayout(type: string, body: Uint8Array, at: number): [number, number] {
  const flags = u32(body, at) & 0xffffff;
  switch (type) {
    case 'stsz':
      return u32(body, at + 4) ? [12, 0] : [12, 4];
    case 'stco':
      return [8, 4];
    case 'co64':
      return [8, 8];
    case 'stsc':
      return [8, 12];
    case 'stts':
      return [8, 8];
    case 'elst':
      return [8, 12]; // 20 per entry in version 1; 12 is the bound either way
    default: // trun: optional data offset and first-sample flags, then up to four 4-byte fields per sample
      return [8 + (flags & 1 ? 4 : 0) + (flags & 4 ? 4 : 0), 4 * bitCount(flags & 0xf00)];
  }
}

const TYPES = new Set(['stsz', 'stco', 'co64', 'stsc', 'stts', 'elst', 'trun']);

/**
 * For fragmented files the demuxer steps through the top-level boxes by their sizes; a 64-bit size
 * (size field 1) of 0 makes it step by 0 bytes forever (found by the fuzz: a pure CPU spin). This
 * replays that walk and refuses a largesize smaller than a box header.
 */
function topLevelProblem(b: Uint8Array): string | undefined {
  let pos = 0;
  while (pos + 8 <= b.length) {
    let size = u32(b, pos);
    if (size === 0) return undefined; // "to the end of the file": the walk stops here
    if (size === 1) {
      if (pos + 16 > b.length) return undefined;
      size = u32(b, pos + 8) * 2 ** 32 + u32(b, pos + 12);
      if (size < 16) return `a top-level box declares an impossible 64-bit size of ${size}`;
    }
    pos += size;
  }
  return undefined;
}

/** Returns why the MP4's box structure cannot be right, or undefined when it is safe to demux. */
export function mp4TableProblem(b: Uint8Array): string | undefined {
  const topLevel = topLevelProblem(b);
  if (topLevel) return topLevel;
  const n = b.length;
  for (let p = 4; p + 4 <= n; p++) {
    // Cheap pre-filter on the first letter before building a string: 's' (stsz, stco, stsc, stts), 'c', 'e', 't'.
    const c = b[p];
    if (c !== 0x73 && c !== 0x63 && c !== 0x65 && c !== 0x74) continue;
    const type = String.fromCharCode(c, b[p + 1]!, b[p + 2]!, b[p + 3]!);
    if (!TYPES.has(type)) continue;
    const start = p - 4;
    const size = u32(b, start);
    if (size !== 0 && size !== 1 && (size < 8 || start + size > n)) continue; // the demuxer would not parse it
    const body = p + 4; // the demuxer reads the table from here, whatever the size says
    const available = Math.max(0, n - body);
    const count = u32(b, body + (type === 'stsz' ? 8 : 4));
    const [header, perEntry] = tableLayout(type, b, body);
    // Without a table each sample still takes at least a byte of the file; with one, the table must fit.
    const fits = perEntry === 0 ? count <= n : header + count * perEntry <= available;
    if (!fits) return `its ${type} box declares ${count} entries, more than the file can hold`;
  }
  return undefined;
}
