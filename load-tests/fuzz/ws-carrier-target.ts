/**
 * The `ws-carrier` fuzz target: the carrier media streams /telephony/v1/{twilio,telnyx,plivo,exotel,vonage}.
 * The well-formed frames come from the test suite's carrier simulators (test/helpers/carriers: the same
 * dialects the telephony tests dial with), the hostile ones follow test/integration/telephony/
 * carrier-frames-fuzz.test.ts — carrier-shaped JSON with random values, random text, JSON and binary, a
 * frame over 64 KiB — mixed into a call that is authenticated most of the time (a transcription-mode call
 * token as `?token=` or in the start message, where each carrier carries it) so the frames reach a live call.
 *
 * Carriers have no in-band reply, so the probe is one that must be answered by a close: the carrier's own
 * `stop` (close 1000) or a frame that is not the protocol (1008 malformed_frame). Every close must be one of
 * the documented codes (README "Limits, closes, metering"); the server sends a carrier nothing else but audio,
 * marks and clears, which must be the carrier's JSON (or Vonage binary audio).
 */
import { CARRIER_MAX_FRAME_BYTES } from '../../src/telephony/call/call-connection.js';
import { exotelDialect } from '../../test/helpers/carriers/exotel.js';
import { plivoDialect } from '../../test/helpers/carriers/plivo.js';
import type { CarrierDialect } from '../../test/helpers/carriers/simulated-call.js';
import { telnyxDialect } from '../../test/helpers/carriers/telnyx.js';
import { twilioDialect } from '../../test/helpers/carriers/twilio.js';
import { vonageDialect } from '../../test/helpers/carriers/vonage.js';
import type { HttpContext, Target } from './http-targets.js';
import type { Rng } from './rng.js';
import { audioBase64, mutateTree, randomJson, randomString, urlPart } from './values.js';
import { jsonObject, wsExchange, wsUrlOf, type MessageVerdict, type WsFrame } from './ws-exchange.js';
import { describeWs, TOKEN_MARK, wsFrames, type WsInput } from './ws-targets.js';

export const CARRIERS = ['twilio', 'telnyx', 'plivo', 'exotel', 'vonage'] as const;
export type Carrier = (typeof CARRIERS)[number];

/** The simulator's dialect with the token where that carrier carries an integrator's parameters. */
export function carrierDialect(carrier: Carrier, token: string | undefined): CarrierDialect {
  const params: Record<string, string> = token === undefined ? {} : { token };
  switch (carrier) {
    case 'twilio':
      return twilioDialect({ customParameters: params });
    case 'telnyx':
      return telnyxDialect({ customParameters: params });
    case 'plivo':
      return plivoDialect({ extraHeaders: params, format: { codec: 'pcmu', sampleRate: 8000 } });
    case 'exotel':
      return exotelDialect({ customParameters: params });
    default:
      return vonageDialect({ headers: params });
  }
}

/**
 * The simulators draw their ids from node:crypto and Plivo's timestamps from the clock; a case must be the same
 * bytes on every run (replay, resume), so those are replaced by ids and times drawn from the case's own Rng —
 * the same id for the same id throughout the case (`ids`), as a stream's frames all carry its id.
 */
function seeded(rng: Rng, ids: Map<string, string>, text: string): string {
  const hex = (n: number) => Array.from({ length: n }, () => rng.int(0, 15).toString(16)).join('');
  const same = (found: string, make: () => string) => ids.get(found) ?? (ids.set(found, make()), ids.get(found)!);
  return (
    text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => same(id, () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`))
      .replace(/[0-9a-f]{32}/g, (id) => same(id, () => hex(32)))
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '2026-01-01T00:00:00.000Z')
      // Epoch-ms timestamps (Plivo's: the stream's start plus the audio sent) keep their offset from the case's first one.
      .replace(/"(1[6-9]\d{11})"/g, (_m, ms: string) => `"${1_767_225_600_000 + Number(ms) - Number(same('epoch', () => ms))}"`)
  );
}

/** A carrier-shaped frame with random values (the property test's `carrierish`), for what no dialect sends. */
function carrierish(rng: Rng): Record<string, unknown> {
  const frame: Record<string, unknown> = {
    event: rng.pick([
      'connected',
      'start',
      'media',
      'mark',
      'dtmf',
      'stop',
      'clear',
      'websocket:connected',
      'websocket:dtmf',
      'playedStream',
      'clearedAudio',
      'error',
      'x',
    ]),
  };
  for (const key of ['streamSid', 'stream_id', 'sequenceNumber', 'start', 'media', 'mark', 'dtmf']) if (rng.chance(0.3)) frame[key] = randomJson(rng, 2);
  if (rng.chance(0.3)) frame.media = { payload: audioBase64(rng, rng.pick([0, 160, 320, 1600])) };
  return frame;
}

function carrierFrames(rng: Rng, d: CarrierDialect, ids: Map<string, string>): WsFrame[] {
  let streamMs = 0;
  const own = (): Record<string, unknown> | Uint8Array => {
    const r = rng.next();
    if (r < 0.08) return carrierish(rng);
    if (r < 0.25) {
      const frame = d.dtmf(rng.chance(0.8) ? rng.pick(['0', '5', '9', '*', '#', 'A']) : randomString(rng).slice(0, 3));
      return 'text' in frame ? (JSON.parse(seeded(rng, ids, frame.text)) as Record<string, unknown>) : carrierish(rng);
    }
    if (r < 0.3) return JSON.parse(seeded(rng, ids, (d.opening().at(-1) as { text: string }).text)) as Record<string, unknown>; // a start (a second one is malformed)
    const bytes = rng.chance(0.8) ? d.mediaFrameBytes : rng.pick([0, 1, 7, 4000]);
    const frame = d.media(rng.bytes(bytes), (streamMs += 20));
    if ('binary' in frame) return frame.binary; // Vonage's audio
    const message = JSON.parse(seeded(rng, ids, frame.text)) as Record<string, unknown>;
    if (rng.chance(0.15) && typeof message.media === 'object' && message.media) (message.media as Record<string, unknown>).payload = audioBase64(rng, bytes);
    return message;
  };
  // Over 64 KiB is the carrier's 1009 frame_too_big, over 128 KiB uWS's drop (1006); the rest of the time a random frame of modest size.
  const oversize = () => (rng.chance(0.7) ? rng.int(1, 4000) : rng.pick([65_600, 200_000]));
  return wsFrames(rng, own, oversize, { other: 0.08, damaged: 0.12 });
}

interface CarrierInput extends WsInput {
  probe: WsFrame;
}

function carrierInspect(carrier: Carrier) {
  return (data: Buffer, isBinary: boolean): MessageVerdict => {
    if (isBinary) return carrier === 'vonage' ? 'ok' : { kind: 'ws-bad-event', detail: `a binary frame of ${data.length} bytes to ${carrier}` };
    return jsonObject(data) ? 'ok' : { kind: 'ws-bad-event', detail: data.toString('utf8', 0, 300) };
  };
}

export const wsCarrierTarget: Target<CarrierInput> = {
  name: 'ws-carrier',
  generate(rng) {
    const carrier = rng.pick(CARRIERS);
    // Where the token travels: the URL (checked before the upgrade), the start message, a bad one, or none.
    const tokenWay = rng.pick(['url', 'url', 'start', 'start', 'bad-url', 'bad-start', 'none'] as const);
    const inStart = tokenWay === 'start' ? TOKEN_MARK : tokenWay === 'bad-start' ? rng.pick(['kct1.x.y', '', randomString(rng).slice(0, 40)]) : undefined;
    const query =
      tokenWay === 'url'
        ? `?token=${TOKEN_MARK}`
        : tokenWay === 'bad-url'
          ? `?token=${urlPart(rng.pick(['kct1.x.y', '', 'kct1.', randomString(rng).slice(0, 40)]))}`
          : '';
    const d = carrierDialect(carrier, inStart);
    const ids = new Map<string, string>();
    const opening = rng.chance(0.8) ? d.opening().map((f) => ('text' in f ? { text: seeded(rng, ids, f.text) } : f)) : [];
    if (opening.length && rng.chance(0.2)) {
      const at = rng.int(0, opening.length - 1);
      opening[at] = { text: JSON.stringify(mutateTree(rng, JSON.parse((opening[at] as { text: string }).text) as Record<string, unknown>, rng.int(1, 2))) };
    }
    const frames = [...opening, ...carrierFrames(rng, d, ids)].slice(0, 8);
    const stop = d.closing()[0];
    // Either ends the stream: the carrier's stop (1000), or a frame that is not the protocol (1008).
    const probe: WsFrame =
      stop && 'text' in stop && rng.chance(0.5)
        ? { text: seeded(rng, ids, stop.text) }
        : { text: rng.pick(['fuzz-probe: not a carrier frame', '[]', '{"event":42}']) };
    return { path: `/telephony/v1/${carrier}${query}`, headers: {}, protocols: [], frames, probe, pauseMs: rng.chance(0.1) ? rng.int(10, 100) : 0 };
  },
  execute(input, ctx: HttpContext) {
    const fill = (s: string) => s.replaceAll(TOKEN_MARK, ctx.callToken);
    return wsExchange({
      url: wsUrlOf(ctx.baseUrl, fill(input.path)),
      headers: input.headers,
      protocols: input.protocols,
      frames: input.frames.map((f) => ('text' in f ? { text: fill(f.text) } : f)),
      probe: input.probe,
      pauseMs: input.pauseMs,
      carrier: true,
      // A frame over the carrier routes' bound (2 × 64 KiB) is dropped by uWS before it is read (README "Limits").
      maxPayloadBytes: 2 * CARRIER_MAX_FRAME_BYTES,
      inspect: carrierInspect(input.path.split(/[/?]/)[3] as Carrier),
      timeoutMs: ctx.caseTimeoutMs,
    });
  },
  describe: (i) =>
    `${describeWs(i)} probe ${'text' in i.probe ? i.probe.text.slice(0, 80) : 'binary' in i.probe ? `<binary ${i.probe.binary.length}>` : '<not UTF-8>'}`,
};
