/**
 * One fragmented-MP4 media fragment — moof (mfhd, traf (tfhd, tfdt, trun)) then mdat — for a run of
 * audio samples of equal duration, written straight into one buffer.
 *
 * Why not mp4box's createMoof() (which the init segment still uses): building box objects and growing a
 * DataStream for every push cost 15–45 ms of one core per 30 s stream, plus GC, measured with 2-frame
 * pushes; this writer does the same in well under a millisecond. The layout is the one createMoof()
 * writes (a test compares the bytes): tfhd with default-base-is-moof and no defaults, a trun carrying
 * data offset, duration, size, flags and composition offset per sample, every sample a sync sample.
 */

export interface FragmentSpec {
  /** mfhd sequence number: 1 for the first fragment, then +1 each. */
  sequenceNumber: number;
  trackId: number;
  /** tfdt: decode time of the first sample, in the track's timescale. */
  baseMediaDecodeTime: number;
  /** Duration of every sample, in the track's timescale. */
  sampleDuration: number;
  /** The samples' bytes (e.g. raw AAC frames), in decode order. */
  samples: readonly Uint8Array[];
}

/** sample_depends_on = 2: the sample depends on no other (every AAC frame is a sync sample). */
const SYNC_SAMPLE_FLAGS = 0x0200_0000;
/** trun flags: data-offset, sample-duration, sample-size, sample-flags, sample-composition-time-offset. */
const TRUN_FLAGS = 0x000f01;
/** tfhd flags: default-base-is-moof (offsets count from the moof's first byte). */
const TFHD_FLAGS = 0x02_0000;
const TRUN_BYTES_PER_SAMPLE = 16;
const U32_LIMIT = 2 ** 32;

export function writeFragment(spec: FragmentSpec): Uint8Array {
  const { samples } = spec;
  // tfdt version 1 (64-bit time) only once the time no longer fits 32 bits (≈ 49 h at 24 kHz).
  const tfdtVersion = spec.baseMediaDecodeTime >= U32_LIMIT ? 1 : 0;
  const tfdtSize = tfdtVersion === 1 ? 20 : 16;
  const trunSize = 20 + TRUN_BYTES_PER_SAMPLE * samples.length;
  const trafSize = 8 + 16 + tfdtSize + trunSize;
  const moofSize = 8 + 16 + trafSize;
  let payloadSize = 0;
  for (const sample of samples) payloadSize += sample.length;
  const mdatSize = 8 + payloadSize;

  const out = new Uint8Array(moofSize + mdatSize);
  const view = new DataView(out.buffer);
  let at = 0;
  const u32 = (value: number): void => {
    view.setUint32(at, value);
    at += 4;
  };
  const header = (size: number, type: string): void => {
    u32(size);
    for (let i = 0; i < 4; i++) out[at++] = type.charCodeAt(i);
  };

  header(moofSize, 'moof');
  header(16, 'mfhd');
  u32(0); // version 0, flags 0
  u32(spec.sequenceNumber);
  header(trafSize, 'traf');
  header(16, 'tfhd');
  u32(TFHD_FLAGS);
  u32(spec.trackId);
  header(tfdtSize, 'tfdt');
  u32(tfdtVersion << 24);
  if (tfdtVersion === 1) u32(Math.floor(spec.baseMediaDecodeTime / U32_LIMIT));
  u32(spec.baseMediaDecodeTime % U32_LIMIT);
  header(trunSize, 'trun');
  u32(TRUN_FLAGS);
  u32(samples.length);
  u32(moofSize + 8); // data offset: from the moof's first byte to the first sample, past mdat's header
  for (const sample of samples) {
    u32(spec.sampleDuration);
    u32(sample.length);
    u32(SYNC_SAMPLE_FLAGS);
    u32(0); // composition time offset: audio is presented in decode order
  }
  header(mdatSize, 'mdat');
  for (const sample of samples) {
    out.set(sample, at);
    at += sample.length;
  }
  return out;
}
