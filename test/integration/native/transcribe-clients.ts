/**
 * The Djelia SDKs' transcription requests, replayed byte for byte as their sources build them, against a
 * test server (their host, https://djelia.cloud, is hard-coded; only it is replaced):
 * - the JS SDK (djelia-org/djelia-js-client, src/services/transcription.js with src/client/client.js): axios
 *   and form-data, a Buffer appended as `file` with filename `audio_file`, `translate_to_french` as the
 *   string 'true'/'false' in `params`, path /api/v{1,2}/models/transcribe[/stream], `x-api-key`; a stream
 *   read with responseType 'stream' and split on '\n', each line JSON.parse'd (arrays flattened);
 * - the Python SDK (djelia-org/djelia-python-sdk, djelia/src/services/transcription.py): `requests` with
 *   files={'file': open(path)} (a part with the file's name and no Content-Type), and `aiohttp.FormData`
 *   with filename `audio_file` (a part typed application/octet-stream), query translate_to_french=true|false.
 */
import { randomBytes } from 'node:crypto';
import type { AxiosResponse } from 'axios';
import FormData from 'form-data';
import { jsSdkAxios } from './sdk-axios.js';

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  translateToFrench?: boolean;
  version?: 1 | 2;
}

/** The SDK's axios instance: x-api-key and a JSON Content-Type by default (the form's headers replace them per call). */
const sdkAxios = (apiKey: string) => jsSdkAxios(apiKey).client;

function sdkRequest(options: ClientOptions, audio: Buffer, stream: boolean) {
  const form = new FormData();
  form.append('file', audio, 'audio_file');
  const url = `${options.baseUrl}/api/v${options.version ?? 2}/models/transcribe${stream ? '/stream' : ''}`;
  return {
    method: 'POST',
    url,
    headers: { 'x-api-key': options.apiKey, ...form.getHeaders() },
    data: form,
    params: { translate_to_french: (options.translateToFrench ?? false).toString() },
    ...(stream ? { responseType: 'stream' as const } : {}),
  };
}

/** `djelia.transcription.transcribe(buffer, translateToFrench, false, version)`: the response as the SDK gets it. */
export function jsSdkTranscribe(options: ClientOptions, audio: Buffer): Promise<AxiosResponse> {
  return sdkAxios(options.apiKey).request(sdkRequest(options, audio, false));
}

/** `transcribe(buffer, translateToFrench, true, version)`: each object as the SDK yields it. */
export async function* jsSdkTranscribeStream(options: ClientOptions, audio: Buffer): AsyncGenerator<unknown> {
  const response = await sdkAxios(options.apiKey).request(sdkRequest(options, audio, true));
  let buffer = '';
  for await (const chunk of response.data as AsyncIterable<Buffer>) {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) if (line.trim()) yield* flatten(JSON.parse(line));
  }
  if (buffer.trim()) yield* flatten(JSON.parse(buffer));
}

function* flatten(data: unknown): Generator<unknown> {
  if (Array.isArray(data)) yield* data;
  else yield data;
}

/** A multipart body as urllib3 (requests) or aiohttp writes it: one `file` part, a 32-hex-digit boundary. */
export function pythonMultipart(audio: Buffer, shape: 'requests' | 'aiohttp', filename: string): { body: Buffer; contentType: string } {
  const boundary = randomBytes(16).toString('hex');
  const partHead =
    shape === 'requests'
      ? `Content-Disposition: form-data; name="file"; filename="${filename}"\r\n\r\n`
      : `Content-Type: application/octet-stream\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(`--${boundary}\r\n${partHead}`), audio, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The Python SDK's call: requests.request(method, url, headers={'x-api-key'}, files=..., params=...) or aiohttp's. */
export function pythonSdkTranscribe(
  options: ClientOptions & { stream?: boolean; shape: 'requests' | 'aiohttp'; filename: string },
  audio: Buffer,
): Promise<Response> {
  const { body, contentType } = pythonMultipart(audio, options.shape, options.filename);
  const path = `/api/v${options.version ?? 2}/models/transcribe${options.stream ? '/stream' : ''}`;
  const headers: Record<string, string> = { 'x-api-key': options.apiKey, 'content-type': contentType };
  if (options.shape === 'requests') Object.assign(headers, { 'user-agent': 'python-requests/2.32.3', 'accept-encoding': 'gzip, deflate', accept: '*/*' });
  return fetch(`${options.baseUrl}${path}?translate_to_french=${options.translateToFrench ? 'true' : 'false'}`, { method: 'POST', headers, body });
}

/** NDJSON as the Python SDK reads it (iter_lines / line by line): every non-empty line is one JSON value. */
export function ndjsonObjects(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line.trim())
    .flatMap((line) => [...flatten(JSON.parse(line))]);
}
