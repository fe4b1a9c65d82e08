/**
 * The `ws-preauth` fuzz target: carrier streams opened with no token (pre-auth, README "Limits"), on a bare
 * TCP socket from one of a few local addresses (127.0.0.2–5, so the per-address cap of 16 is met when cases
 * pile up), doing what a client without credentials might:
 *
 * - `big`: announce one message over the routes' 128 KiB bound (up to 2^40 bytes), send part of it or none;
 * - `fragments`: a message in fragments that together pass the bound;
 * - `near`: one message between 64 KiB and 128 KiB, sent whole (the carrier's 1009 frame_too_big);
 * - `pings`: 1–8 pings, read (each must be answered), or a flood of them never read;
 * - `slow`: the start message (the carrier's own, with a valid, bad or no token) after 0–400 ms;
 * - `silent`: nothing at all, until the start window (5 s) closes it;
 * - `many`: 2–24 sockets at once from one address.
 *
 * Every socket then gets a probe that ends the stream (the carrier's `stop`, or a frame that is not its
 * protocol), unless the case already expects the server to have dropped it. Pass: an upgrade refused with the
 * envelope (429, or 503 with Retry-After: a cap), a documented close (1000, 1008 start_timeout /
 * invalid_call_token / malformed_frame, 1009 frame_too_big, 1011 app_unreachable), or a drop (1006) where the
 * case sent what is dropped (over the bound, a ping flood). Failure: another close, a drop the case did not
 * call for, or a close frame where a drop was due (the server read and kept what it should have refused
 * unread) (`ws-bad-close`), a ping not answered (`ws-bad-event`), no close (`hang`).
 */
import type net from 'node:net';
import { rawUpgrade } from '../../test/helpers/hostile-sockets.js';
import { FrameReader, OPCODE, clientFrame } from '../realtime/websocket-frames.js';
import type { HttpContext, Target } from './http-targets.js';
import { classifyClose, classifyHttp, FAILURES, type Outcome } from './outcomes.js';
import type { Rng } from './rng.js';
import { carrierDialect, CARRIERS, type Carrier } from './ws-carrier-target.js';
import { TOKEN_MARK } from './ws-targets.js';

type Action = 'big' | 'fragments' | 'near' | 'pings' | 'slow' | 'silent' | 'many';

interface PreAuthInput {
  carrier: Carrier;
  address: string;
  action: Action;
  /** big: the announced length and how much of it is sent; near / fragments: the sizes sent. */
  sizes: number[];
  /** pings: how many; 0 = a flood never read. */
  pings: number;
  /** slow: the delay and the start message (with TOKEN_MARK where the valid token goes). */
  delayMs: number;
  start: string | null;
  /** many: how many sockets. */
  sockets: number;
  /** The frame that ends the stream: the carrier's stop (close 1000) or not its protocol (1008). */
  probe: string;
}

/** The carrier routes' message bound: uWS drops a socket whose message passes it. */
const BOUND = 128 * 1024;
const START_WINDOW_MS = 5000;
const MASK = Buffer.from([0x0a, 0x1b, 0x2c, 0x3d]);

export const wsPreAuthTarget: Target<PreAuthInput> = {
  name: 'ws-preauth',
  generate(rng) {
    const carrier = rng.pick(CARRIERS);
    const action = rng.pick<Action>([
      'big',
      'big',
      'fragments',
      'near',
      'pings',
      'pings',
      'slow',
      'slow',
      'many',
      ...(rng.chance(0.1) ? (['silent'] as const) : []),
    ]);
    const tokenWay = rng.pick(['valid', 'bad', 'none'] as const);
    const d = carrierDialect(carrier, tokenWay === 'valid' ? TOKEN_MARK : tokenWay === 'bad' ? 'kct1.x.y' : undefined);
    const opening = d
      .opening()
      .map((f) => ('text' in f ? f.text : null))
      .filter((t): t is string => t !== null);
    const stop = d.closing()[0];
    const probe = stop && 'text' in stop && rng.chance(0.5) ? stop.text : rng.pick(['fuzz-probe: not a carrier frame', '[]', '{"event":42}']);
    const announced = rng.pick([BOUND + 1, 200_000, 1 << 20, 64 << 20, 2 ** 40]);
    return {
      carrier,
      address: `127.0.0.${rng.int(2, 5)}`,
      action,
      sizes:
        action === 'big'
          ? [announced, rng.pick([0, 1, 1000, 100_000])]
          : action === 'near'
            ? [rng.int(64 * 1024 + 1, BOUND)]
            : action === 'fragments'
              ? Array.from({ length: rng.int(2, 6) }, () => rng.int(30_000, 100_000))
              : [],
      pings: action === 'pings' ? (rng.chance(0.5) ? rng.int(1, 8) : 0) : 0,
      delayMs: rng.int(0, 400),
      start: opening.length ? opening.join('\n') : null,
      sockets: action === 'many' ? rng.int(2, 24) : 1,
      probe,
    };
  },
  async execute(input, ctx) {
    const outcomes = await Promise.all(Array.from({ length: input.sockets }, () => oneSocket(input, ctx)));
    // The first failure, else a refusal by a cap (so that they show in the tally), else the first socket's close.
    return outcomes.find((o) => FAILURES.has(o.kind)) ?? outcomes.find((o) => o.kind === '4xx' || o.kind === '503') ?? outcomes[0]!;
  },
  describe: (i) =>
    `${i.carrier} from ${i.address}: ${i.action} ${i.sizes.join('/')} pings ${i.pings} delay ${i.delayMs} sockets ${i.sockets} start ${JSON.stringify(i.start?.slice(0, 80) ?? null)} probe ${JSON.stringify(i.probe.slice(0, 60))}`,
};

/** Whether the case sends what the server drops without a close frame (the client then sees 1006). */
function dropsExpected(input: PreAuthInput): boolean {
  if (input.action === 'big') return true;
  if (input.action === 'fragments') return input.sizes.reduce((a, b) => a + b, 0) > BOUND;
  return input.action === 'pings' && input.pings === 0;
}

async function oneSocket(input: PreAuthInput, ctx: HttpContext): Promise<Outcome> {
  let upgrade;
  try {
    upgrade = await rawUpgrade(ctx.port, `/telephony/v1/${input.carrier}`, { localAddress: input.address, timeoutMs: ctx.caseTimeoutMs });
  } catch (error) {
    return { kind: 'no-answer', detail: String(error).slice(0, 300) };
  }
  if (upgrade.status !== 101) {
    upgrade.socket.destroy();
    const headers = { get: (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(upgrade.head)?.[1] ?? null };
    return classifyHttp(upgrade.status, headers, upgrade.body);
  }
  return attack(upgrade.socket, input, ctx);
}

function attack(socket: net.Socket, input: PreAuthInput, ctx: HttpContext): Promise<Outcome> {
  const fill = (s: string) => s.replaceAll(TOKEN_MARK, ctx.callToken);
  const droppable = dropsExpected(input);
  return new Promise((resolve) => {
    let close: { code: number; reason: string } | null = null;
    let pongs = 0;
    let settled = false;
    const reader = new FrameReader({ message() {}, ping() {}, pong: () => void pongs++, close: (code, reason) => (close ??= { code, reason }) });
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const wait = input.action === 'silent' ? START_WINDOW_MS + 5000 : Math.min(ctx.caseTimeoutMs, 15_000);
    const timer = setTimeout(() => finish({ kind: 'hang', detail: `no close within ${wait} ms` }), wait);
    const reading = () => {
      socket.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (error) {
          finish({ kind: 'ws-bad-event', detail: String(error).slice(0, 300) });
        }
      });
      socket.resume();
    };
    socket.on('error', () => {});
    socket.on('close', () => {
      if (input.action === 'pings' && input.pings > 0 && pongs < input.pings)
        return finish({ kind: 'ws-bad-event', detail: `${pongs} pongs for ${input.pings} pings` });
      // What is dropped must be dropped, at once: a close frame later (start_timeout) means it was read and kept.
      if (droppable && close)
        return finish({ kind: 'ws-bad-close', status: close.code, detail: `closed ${close.code} ${close.reason} instead of being dropped at once` });
      finish(close ? classifyClose(close.code, close.reason, { droppable, carrier: true }) : classifyClose(1006, '', { droppable, carrier: true }));
    });
    const write = (bytes: Buffer) => !socket.destroyed && socket.write(bytes);
    const text = (s: string) => write(clientFrame(OPCODE.text, Buffer.from(s), MASK));
    const probe = () => text(fill(input.probe));
    switch (input.action) {
      case 'big': {
        const [announced, sent] = input.sizes as [number, number];
        const header = Buffer.alloc(14);
        header[0] = 0x80 | OPCODE.binary;
        header[1] = 0x80 | 127;
        header.writeBigUInt64BE(BigInt(announced), 2);
        MASK.copy(header, 10);
        write(header);
        if (sent) write(Buffer.alloc(sent, 0x55));
        reading();
        return;
      }
      case 'fragments': {
        input.sizes.forEach((size, i) => {
          const frame = clientFrame(i === 0 ? OPCODE.binary : OPCODE.continuation, Buffer.alloc(size, 0x33), MASK);
          if (i < input.sizes.length - 1) frame[0] = frame[0]! & 0x7f; // not the last: FIN clear
          write(frame);
        });
        reading();
        if (!droppable) probe();
        return;
      }
      case 'near':
        reading();
        text('x'.repeat(input.sizes[0]!));
        return;
      case 'pings':
        if (input.pings > 0) {
          reading();
          for (let i = 0; i < input.pings; i++) write(clientFrame(OPCODE.ping, Buffer.from(`p${i}`), MASK));
          // The probe once every pong is in (or 2 s): it ends the stream.
          const started = Date.now();
          const check = setInterval(() => {
            if (pongs >= input.pings || Date.now() - started > 2000) {
              clearInterval(check);
              probe();
            }
          }, 5);
        } else {
          const flood = Buffer.concat(Array.from({ length: 256 }, () => clientFrame(OPCODE.ping, Buffer.alloc(125, 0x70), MASK)));
          for (let i = 0; i < 16; i++) write(flood); // ≈ 0.5 MiB of pings, never reading while they go
          setTimeout(reading, 200);
        }
        return;
      case 'slow':
        reading();
        setTimeout(() => {
          for (const frame of input.start?.split('\n') ?? []) text(fill(frame));
          probe();
        }, input.delayMs);
        return;
      case 'silent':
        reading();
        return;
      default:
        reading();
        probe();
    }
  });
}
