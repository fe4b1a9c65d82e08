/**
 * Telephony test helpers: a server with the realtime models and an outbound allow-list that admits the test's
 * own apps on 127.0.0.1; call tokens minted through the public route; a simulated carrier call connected to
 * Kuma's carrier path; caller speech from the server's own TTS, as PCM at the carrier's rate; and what Kuma
 * said to the caller, transcribed by the server's speech model.
 */
import WebSocket from 'ws';
import alawmulaw from 'alawmulaw';
import { startRealtimeServer, speak } from './realtime.js';
import type { TestServer } from './test-server.js';
import { wsUrl } from './websocket-client.js';
import { simulators, type SimulatedCall } from './carriers/index.js';
import type { TokenOptions } from './carriers/index.js';
import { transcribeWith } from './speech-audio.js';

export function startTelephonyServer(config: Record<string, unknown> = {}): Promise<TestServer> {
  return startRealtimeServer({ config: { outboundAllow: '127.0.0.1', ...config } });
}

/** POST /telephony/v1/tokens with `body` → the token (throws with the server's answer otherwise). */
export async function mintToken(t: TestServer, body: Record<string, unknown>, apiKey = t.apiKey): Promise<string> {
  const res = await fetch(`${t.baseUrl}/telephony/v1/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { token?: string };
  if (res.status !== 200 || !json.token) throw new Error(`token ${res.status}: ${JSON.stringify(json)}`);
  return json.token;
}

export interface CarrierCall {
  ws: WebSocket;
  call: SimulatedCall;
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens Kuma's carrier path (with `query`, e.g. `?token=`) and starts a simulated call on it. */
export async function dialCarrier(
  t: TestServer,
  carrier: keyof typeof simulators,
  options: TokenOptions = {},
  query = '',
  headers: Record<string, string> = {},
): Promise<CarrierCall> {
  const ws = new WebSocket(wsUrl(t.baseUrl, `/telephony/v1/${carrier}${query}`), { headers });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const call = simulators[carrier](ws, options);
  call.open();
  return { ws, call, closed };
}

/** Demo speech of `text` as 16-bit PCM at 8 kHz (what a phone line carries), from the server's own voice. */
export async function callerSpeech(t: TestServer, text: string): Promise<Int16Array> {
  const ulaw = await speak(t, text, 'g711_ulaw');
  return Int16Array.from(alawmulaw.mulaw.decode(ulaw));
}

/** What the caller heard (or received), transcribed by the server's speech model. */
export function transcribePhone(t: TestServer, pcm: Int16Array, rate = 8000): Promise<string> {
  return transcribeWith(
    t.server.engines!,
    Float32Array.from(pcm, (v) => v / 32768),
    rate,
  );
}

/** Demo speech of `text` as 16-bit PCM at `rate` (8000 or 16000), for carriers that carry linear PCM. */
export async function callerSpeechPcm(t: TestServer, text: string, rate: 8000 | 16000): Promise<Int16Array> {
  const res = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input: text, voice: 'alloy', response_format: `l16_${rate}` }),
  });
  if (res.status !== 200) throw new Error(`speech ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
}
