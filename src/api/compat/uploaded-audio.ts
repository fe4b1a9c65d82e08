/**
 * The audio file of a multipart request, decoded (in the decoder worker pool) to 16 kHz mono for the
 * speech models. Empty, undecodable and over-long uploads become 400 / 413 envelopes naming `file`.
 */
import type { DecoderPool } from '../../codecs/decode/decoder-pool.js';
import type { DecodedAudio } from '../../codecs/types.js';
import { ApiError } from '../errors.js';
import type { MultipartForm } from '../uploads.js';

export const ASR_SAMPLE_RATE = 16000;

export interface AudioInputDeps {
  decoder: DecoderPool;
  maxAudioSeconds: number;
}

export async function decodeUploadedAudio(form: MultipartForm, deps: AudioInputDeps): Promise<DecodedAudio> {
  const file = form.files.file;
  if (!file) {
    const sentAsText = typeof form.fields.file === 'string';
    throw new ApiError('missing_required_parameter', sentAsText ? 'file: expected an uploaded file, got a text field' : 'file: Field required', { param: 'file' });
  }
  if (file.size === 0) throw new ApiError('invalid_value', 'file: the uploaded file is empty.', { param: 'file' });
  const bytes = await file.read();
  return deps.decoder.decode(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
    targetRate: ASR_SAMPLE_RATE,
    maxDurationSeconds: deps.maxAudioSeconds,
  });
}
