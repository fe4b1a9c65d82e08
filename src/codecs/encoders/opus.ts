/**
 * Ogg Opus output (`opus`, audio/ogg): libopus through the native `@discordjs/opus` binding at 24 kHz mono,
 * 20 ms frames, VOIP application, complexity 5 (0.1 ms of CPU per frame), 32 kbps VBR; framed by our Ogg
 * muxer (ogg-muxer.ts).
 *
 * Stream layout and the decisions behind it:
 * - The two header pages (OpusHead, OpusTags) come out with the first push(), before any audio, so a client
 *   can set up its decoder while the first frame is still being synthesised.
 * - Every 20 ms frame goes out on its own page as soon as it is encoded. That costs 28 bytes of page header
 *   per frame (≈11 kbit/s) but keeps latency at one frame, and makes the bytes independent of how the PCM
 *   was chunked.
 * - Pre-skip is the encoder's lookahead, and flush() pads with silence until the lookahead has been pushed
 *   through, then sets the last page's granule to pre-skip + real samples (RFC 7845 end trimming), so a
 *   decoder outputs exactly the samples that went in.
 */

import { randomInt } from 'node:crypto';
import opusBinding from '@discordjs/opus';
import { formatInfo, OPUS_FRAME_SAMPLES } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { concatBytes, streamingEncoderFromCore } from './encoder-lifecycle.js';
import { OggStreamWriter, opusHeadPacket, opusTagsPacket, type OggPacket } from './ogg-muxer.js';
import { floatToInt16 } from './pcm.js';

export const OPUS_BITRATE = 32_000;
export const OPUS_COMPLEXITY = 5;

// libopus CTL request numbers (opus_defines.h); the binding passes them through unchanged.
const OPUS_SET_APPLICATION_REQUEST = 4000;
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_COMPLEXITY_REQUEST = 4010;

/** Ogg Opus granule positions always count 48 kHz samples, whatever the coding rate. */
const GRANULE_RATE = 48_000;

/**
 * The encoder's lookahead at the coding rate. The binding cannot call OPUS_GET_LOOKAHEAD (it needs an out
 * pointer), so this is libopus's own formula for the VOIP/AUDIO applications: Fs/400 (2.5 ms of CELT
 * overlap) + Fs/250 (4 ms delay compensation) = 156 samples at 24 kHz, i.e. the usual 312 at 48 kHz.
 * The contract test measures the actual delay and checks this value.
 */
export function opusLookahead(sampleRate: number): number {
  return sampleRate / 400 + sampleRate / 250;
}

export const OPUS_VENDOR = 'Kuma (libopus via @discordjs/opus)';

export async function createOpusEncoder(options: EncoderOptions): Promise<StreamingEncoder> {
  const info = formatInfo('opus');
  const rate = info.sampleRate;
  const granulePerSample = GRANULE_RATE / rate;
  const lookahead = opusLookahead(rate);
  const preSkip = lookahead * granulePerSample;

  const encoder = new opusBinding.OpusEncoder(rate, 1);
  // The application can only be changed before the first frame is encoded; the binding defaults to AUDIO.
  encoder.applyEncoderCTL(OPUS_SET_APPLICATION_REQUEST, OPUS_APPLICATION_VOIP);
  encoder.applyEncoderCTL(OPUS_SET_COMPLEXITY_REQUEST, OPUS_COMPLEXITY);
  encoder.setBitrate(OPUS_BITRATE);

  // A random serial, as RFC 3533 asks, so that streams concatenated by a client stay distinguishable.
  const ogg = new OggStreamWriter(randomInt(0, 0x1_0000_0000));
  const frame = new Int16Array(OPUS_FRAME_SAMPLES);
  let filled = 0;
  let inputSamples = 0; // real samples pushed (at `rate`)
  let framesEncoded = 0;
  let headersSent = false;

  const headers = (): Uint8Array => {
    if (headersSent) return new Uint8Array(0);
    headersSent = true;
    const head = opusHeadPacket({ channels: 1, preSkip, inputSampleRate: rate });
    return concatBytes([ogg.writePackets([{ data: head, granule: 0n }]), ogg.writePackets([{ data: opusTagsPacket(OPUS_VENDOR), granule: 0n }])]);
  };

  const encodeFrame = (): OggPacket => {
    // The native side reads the buffer as opus_int16 in host order, which is what an Int16Array holds.
    const packet = encoder.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
    framesEncoded++;
    filled = 0;
    return { data: new Uint8Array(packet.buffer, packet.byteOffset, packet.length), granule: BigInt(framesEncoded * OPUS_FRAME_SAMPLES * granulePerSample) };
  };

  /** Copies samples into the frame buffer, returning the packets of every frame that filled up. */
  const take = (pcm: Int16Array): OggPacket[] => {
    const packets: OggPacket[] = [];
    for (let offset = 0; offset < pcm.length;) {
      const n = Math.min(OPUS_FRAME_SAMPLES - filled, pcm.length - offset);
      frame.set(pcm.subarray(offset, offset + n), filled);
      filled += n;
      offset += n;
      if (filled === OPUS_FRAME_SAMPLES) packets.push(encodeFrame());
    }
    return packets;
  };

  return streamingEncoderFromCore(info, options, {
    encode(samples) {
      inputSamples += samples.length;
      const out = [headers()];
      for (const packet of take(floatToInt16(samples))) out.push(ogg.writePackets([packet]));
      return concatBytes(out.filter((part) => part.length > 0));
    },
    finish() {
      const out = [headers()];
      // Push silence until every real sample has left the lookahead, i.e. frames cover input + lookahead.
      // This is at least one frame (what is buffered is < 1 frame), so the EOS page always carries audio.
      const packets: OggPacket[] = [];
      while (framesEncoded * OPUS_FRAME_SAMPLES < inputSamples + lookahead) {
        frame.fill(0, filled);
        filled = OPUS_FRAME_SAMPLES;
        packets.push(encodeFrame());
      }
      const last = packets[packets.length - 1]!;
      // End trimming: the final granule counts only real samples, so decoders drop the padding.
      last.granule = BigInt(preSkip + inputSamples * granulePerSample);
      out.push(ogg.writePackets(packets, { eos: true }));
      return concatBytes(out);
    },
    // The native encoder is freed by its finaliser; dropping our references is all there is to do.
    release() {},
  });
}
