/**
 * WebSocket fuzz targets: the OpenAI-Realtime session socket (`ws-realtime`: GET {prefix}/realtime) and the
 * streaming speech socket (`ws-speech`: GET {prefix}/audio/speech/stream and the ElevenLabs path
 * /text-to-speech/:voice_id/stream-input); the carrier streams are in ws-carrier-target.ts. Each case opens a
 * connection (a valid key most of the time, in any of the ways a client may send it), sends 1–8 messages —
 * the protocol's own events with hostile values, random JSON, text that is not JSON, binary frames, now and
 * then an oversize or non-UTF-8 frame — then a probe the server must answer (ws-exchange.ts), and closes.
 */
import type { HttpContext, Target } from './http-targets.js';
import type { Outcome } from './outcomes.js';
import type { Rng } from './rng.js';
import { audioBase64, mutateTree, randomJson, randomNumber, randomString, speechText, urlPart } from './values.js';
import { jsonObject, wsExchange, wsUrlOf, type MessageVerdict, type WsFrame } from './ws-exchange.js';

/** Where the key (or call token) goes, filled in at run time (generate() cannot know it). */
export const KEY_MARK = 'FUZZ_API_KEY';
export const TOKEN_MARK = 'FUZZ_CALL_TOKEN';

export interface WsInput {
  path: string;
  headers: Record<string, string>;
  protocols: string[];
  frames: WsFrame[];
  pauseMs: number;
}

const PREFIXES = ['/openai/v1', '/compat/v1'];

/** The key on the upgrade: a header, ElevenLabs' header, a browser's subprotocol; now and then a bad one or none. */
function wsAuth(rng: Rng, xiHeader: boolean): Pick<WsInput, 'headers' | 'protocols'> {
  const protocols = rng.chance(0.3) ? ['realtime'] : [];
  if (rng.chance(0.05))
    return rng.pick<Pick<WsInput, 'headers' | 'protocols'>>([
      { headers: {}, protocols },
      { headers: { authorization: 'Bearer nope' }, protocols },
      { headers: {}, protocols: ['realtime', 'openai-insecure-api-key.nope'] },
    ]);
  const way = rng.int(0, xiHeader ? 3 : 2);
  if (way === 0) return { headers: { authorization: `Bearer ${KEY_MARK}` }, protocols };
  if (way === 1) return { headers: { 'x-api-key': KEY_MARK }, protocols };
  if (way === 2) return { headers: {}, protocols: ['realtime', `openai-insecure-api-key.${KEY_MARK}`] };
  return { headers: { 'xi-api-key': KEY_MARK }, protocols };
}

/** The frames every protocol gets besides its own events: random JSON, text, binary, rarely oversize or not UTF-8. */
function otherFrame(rng: Rng, oversizeBytes: number): WsFrame {
  const r = rng.next();
  if (r < 0.4) return { text: JSON.stringify(randomJson(rng)) ?? 'null' };
  if (r < 0.7) return { text: randomString(rng) };
  if (r < 0.93) return { binary: rng.bytes(rng.pick([0, 1, 160, 640, 3000])) };
  if (r < 0.97) return { notUtf8: Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d) }; // '{', two bytes no UTF-8 has, '}'
  return { text: `{"type":"x","pad":"${'p'.repeat(oversizeBytes)}"}` };
}

/**
 * 1–8 frames: mostly the protocol's own messages (an object, damaged now and then, or binary audio), the rest
 * otherFrame. The rates are the target's: a carrier stream ends at its first malformed frame, so it gets less
 * damage than a realtime session, which answers each bad event and goes on.
 */
function frames(rng: Rng, own: () => Record<string, unknown> | Uint8Array, oversizeBytes: () => number, rates = { other: 0.2, damaged: 0.4 }): WsFrame[] {
  return Array.from({ length: rng.int(1, 8) }, () => {
    if (rng.chance(rates.other)) return otherFrame(rng, oversizeBytes());
    const message = own();
    if (message instanceof Uint8Array) return { binary: message };
    if (rng.chance(rates.damaged)) mutateTree(rng, message, rng.int(1, 3));
    return { text: JSON.stringify(message) };
  });
}

async function execute(input: WsInput, ctx: HttpContext, probe: WsFrame, inspect: (data: Buffer, isBinary: boolean) => MessageVerdict): Promise<Outcome> {
  const fill = (s: string) => s.replaceAll(KEY_MARK, ctx.apiKey).replaceAll(TOKEN_MARK, ctx.callToken);
  return wsExchange({
    url: wsUrlOf(ctx.baseUrl, fill(input.path)),
    headers: Object.fromEntries(Object.entries(input.headers).map(([k, v]) => [k, fill(v)])),
    protocols: input.protocols.map(fill),
    frames: input.frames.map((f) => ('text' in f ? { text: fill(f.text) } : f)),
    probe,
    pauseMs: input.pauseMs,
    carrier: false,
    inspect,
    timeoutMs: ctx.caseTimeoutMs,
  });
}

export function describeWs(i: WsInput): string {
  const shown = i.frames.map((f) =>
    'text' in f ? f.text.slice(0, 120) + (f.text.length > 120 ? `… (${f.text.length})` : '') : 'binary' in f ? `<binary ${f.binary.length}>` : '<not UTF-8>',
  );
  return `${i.path} ${JSON.stringify({ headers: i.headers, protocols: i.protocols })} ${JSON.stringify(shown)}`;
}

// ---------------------------------------------------------------- ws-realtime

const PROBE_ID = 'fuzz-probe';
const REALTIME_PROBE: WsFrame = { text: JSON.stringify({ type: 'kuma.fuzz.probe', event_id: PROBE_ID }) };
const SPEECH_MODELS = ['sunjata-1', 'whisper-1', 'gpt-4o-transcribe', 'banjugu-1', 'jifili-1', 'nope', ''];

function vad(rng: Rng): unknown {
  if (rng.chance(0.3)) return null;
  const n = () => (rng.chance(0.7) ? rng.int(0, 2000) : randomNumber(rng));
  return {
    type: 'server_vad',
    threshold: rng.chance(0.7) ? rng.next() : randomNumber(rng),
    prefix_padding_ms: n(),
    silence_duration_ms: n(),
    idle_timeout_ms: rng.chance(0.5) ? null : n(),
  };
}

function realtimeEvent(rng: Rng): Record<string, unknown> {
  const event_id = rng.chance(0.3) ? randomString(rng).slice(0, 40) : undefined;
  const transcription = {
    model: rng.pick(SPEECH_MODELS),
    language: rng.pick(['bam_Latn', 'fra_Latn', 'eng_Latn', 'bm', 'fr', null]),
    prompt: rng.chance(0.2) ? randomString(rng) : undefined,
  };
  switch (rng.int(0, 9)) {
    case 0: {
      const format = rng.pick<unknown>([
        { type: 'audio/pcm', rate: rng.pick([24000, 16000, 8000, 48000, 44100, 0, -1]) },
        { type: 'audio/pcmu' },
        { type: 'audio/pcma' },
        { type: 'audio/opus' },
      ]);
      return { type: 'session.update', event_id, session: { type: 'transcription', audio: { input: { format, transcription, turn_detection: vad(rng) } } } };
    }
    case 1:
      return {
        type: 'transcription_session.update',
        event_id,
        session: {
          input_audio_format: rng.pick(['pcm16', 'g711_ulaw', 'g711_alaw', 'mp3']),
          input_audio_transcription: transcription,
          turn_detection: vad(rng),
        },
      };
    case 2:
      return {
        type: 'session.update',
        event_id,
        session: {
          audio: {
            input: { transcription: { model: rng.pick(SPEECH_MODELS) } },
            output: { language: rng.pick(['fra_Latn', 'eng_Latn', 'fr', 'en', 'bam_Latn', 'de']) },
          },
        },
      };
    case 3:
      return { type: rng.pick(['input_audio_buffer.commit', 'input_audio_buffer.clear', 'session.close']), event_id };
    case 4:
      return { type: rng.pick(['response.create', 'conversation.item.create', 'input_audio_buffer.append ', '', 'SESSION.UPDATE']), event_id };
    default: {
      // Appends are most of a real session; 100 ms of 24 kHz PCM is 4800 bytes (a commit needs that much).
      const bytes = rng.pick([0, 1, 160, 960, 4800, 9600, rng.int(0, 20_000)]);
      return {
        type: rng.chance(0.8) ? 'input_audio_buffer.append' : 'session.input_audio_buffer.append',
        event_id,
        audio: rng.chance(0.95) ? audioBase64(rng, bytes) : randomJson(rng, 1),
      };
    }
  }
}

function realtimeInspect(data: Buffer): MessageVerdict {
  const event = jsonObject(data);
  if (!event || typeof event.type !== 'string') return { kind: 'ws-bad-event', detail: data.toString('utf8', 0, 300) };
  if (event.type !== 'error') return 'ok';
  const error = (event.error ?? {}) as Record<string, unknown>;
  if (error.type === 'server_error' || error.code === 'server_error') return { kind: 'ws-server-error', detail: JSON.stringify(error) };
  return error.event_id === PROBE_ID ? 'probe-answered' : 'ok';
}

export const wsRealtimeTarget: Target<WsInput> = {
  name: 'ws-realtime',
  generate(rng) {
    const query = [
      rng.chance(0.7) ? `intent=${rng.pick(['transcription', 'transcription', 'translation', 'x'])}` : '',
      rng.chance(0.4) ? `model=${urlPart(rng.pick([...SPEECH_MODELS, 'gpt-4o-realtime-preview', randomString(rng).slice(0, 30)]))}` : '',
      rng.chance(0.2) ? `language=${rng.pick(['fra_Latn', 'eng_Latn', 'fr', 'de', ''])}` : '',
    ].filter(Boolean);
    // Over KUMA_REALTIME_MAX_MESSAGE_BYTES (15 MiB) is an error event; over the transport's 32 MiB, close 1009.
    const oversize = () => (rng.chance(0.8) ? rng.int(1, 20_000) : rng.chance(0.9) ? 16 << 20 : 33 << 20);
    return {
      path: `${rng.pick(PREFIXES)}/realtime${query.length ? `?${query.join('&')}` : ''}`,
      ...wsAuth(rng, false),
      frames: frames(rng, () => realtimeEvent(rng), oversize),
      pauseMs: rng.chance(0.05) ? rng.int(10, 200) : 0,
    };
  },
  execute: (input, ctx) => execute(input, ctx, REALTIME_PROBE, realtimeInspect),
  describe: describeWs,
};

// ---------------------------------------------------------------- ws-speech

/** A private-use character no voice can say: the refusal names it, so its error is the probe's answer. */
const PROBE_CHAR = '\ue123';
const SPEECH_PROBE: WsFrame = { text: JSON.stringify({ text: PROBE_CHAR }) };

function speechMessage(rng: Rng): Record<string, unknown> {
  const r = rng.next();
  if (r < 0.45) return { text: rng.chance(0.9) ? `${speechText(rng, 60)} ` : rng.pick(['x'.repeat(10_001), 'i ni ce '.repeat(700), randomString(rng)]) };
  if (r < 0.55) return { flush: true, ...(rng.chance(0.5) ? { text: speechText(rng, 20) } : {}) };
  if (r < 0.62) return { text: '' }; // the end of the input
  if (r < 0.7)
    return {
      text: ' ',
      voice_settings: { stability: randomNumber(rng), similarity_boost: 0.8 },
      generation_config: { chunk_length_schedule: [120, 160, 250, 290] },
      xi_api_key: KEY_MARK,
    };
  if (r < 0.8) return { text: speechText(rng, 20), try_trigger_generation: rng.chance(0.5) };
  return { text: randomJson(rng, 1), flush: randomJson(rng, 0) };
}

function speechInspect(data: Buffer): MessageVerdict {
  const message = jsonObject(data);
  if (!message) return { kind: 'ws-bad-event', detail: data.toString('utf8', 0, 300) };
  if (typeof message.audio === 'string' || message.isFinal === true) return 'ok';
  if (typeof message.message !== 'string' || typeof message.error !== 'string') return { kind: 'ws-bad-event', detail: JSON.stringify(message).slice(0, 300) };
  if (message.error === 'server_error' || message.code === 1011) return { kind: 'ws-server-error', detail: JSON.stringify(message) };
  // The probe's refusal; or, once the input has ended, the refusal of any later message (the socket closes after the audio).
  return message.message.includes('U+E123') || message.message.startsWith('The input has ended') ? 'probe-answered' : 'ok';
}

export const wsSpeechTarget: Target<WsInput> = {
  name: 'ws-speech',
  generate(rng) {
    const format = rng.chance(0.8)
      ? rng.pick([
          'pcm',
          'mp3',
          'opus',
          'wav',
          'ulaw',
          'alaw',
          'l16_8000',
          'l16_16000',
          'fmp4',
          'pcm_16000',
          'pcm_8000',
          'pcm_24000',
          'ulaw_8000',
          'mp3_44100_128',
          'opus_48000_64',
        ])
      : rng.pick(['pcm_22050', 'aac', 'mp3_x', '', randomString(rng).slice(0, 20)]);
    const inactivity = rng.chance(0.1) ? `&inactivity_timeout=${rng.pick(['1', '20', '180', '181', '0', '-5', 'abc', '1.5'])}` : '';
    const model = rng.chance(0.85) ? rng.pick(['jifili-1', 'tts-1', '']) : rng.pick(['djelia-tts-v1', 'sunjata-1', 'nope']);
    const voice = rng.chance(0.9) ? rng.pick(['moussa', 'alloy', 'nova', 'coral', 'Moussa']) : urlPart(randomString(rng).slice(0, 30) || 'v');
    const eleven = rng.chance(0.3);
    const path = eleven
      ? `${rng.pick(PREFIXES)}/text-to-speech/${voice}/stream-input?model_id=${model}&output_format=${urlPart(format)}${inactivity}`
      : `${rng.pick(PREFIXES)}/audio/speech/stream?model=${model}&voice=${voice}&${rng.chance(0.7) ? 'output_format' : 'response_format'}=${urlPart(format)}${inactivity}`;
    const oversize = () => (rng.chance(0.9) ? rng.int(1, 20_000) : 33 << 20);
    return { path, ...wsAuth(rng, true), frames: frames(rng, () => speechMessage(rng), oversize), pauseMs: rng.chance(0.05) ? rng.int(10, 200) : 0 };
  },
  execute: (input, ctx) => execute(input, ctx, SPEECH_PROBE, speechInspect),
  describe: describeWs,
};

export { execute as executeWs, frames as wsFrames, otherFrame, wsAuth };
