/**
 * Writes one HTTP response through uWebSockets.js: every write is corked (uWS requires it outside its
 * own callbacks), a streamed write that meets backpressure waits for `onWritable` before the next one,
 * and a client that reads nothing for `stallTimeoutMs` is disconnected. So at most one chunk beyond the
 * socket buffers is ever queued toward a slow client.
 *
 * Delivery confirmation (what a charge waits for, README "Accounts, keys and prices"): uWS keeps what the
 * kernel does not take in a buffer of its own, which a crash loses, and says nothing when a corked write
 * ends up there. But every write first flushes that buffer, and reports backpressure when it cannot. So a
 * response whose charge waits for delivery sends its last bytes as probes: a probe taken without
 * backpressure proves that everything before it has left the process (the probe itself, a few bytes, goes
 * out in the same flush). A whole body: `tryEnd` of all but its last byte, then of the last byte, which
 * tryEnd takes only after flushing (else it writes nothing and says so) — `sendWholeDelivered`. A stream:
 * each chunk's last PROBE_BYTES bytes are written one at a time until one is taken — `write` in
 * `confirming` mode, then `endConfirmed`.
 *
 * uWS throws (and the throw ends the process) when a response is touched after it ended or was aborted,
 * so every call on `res` goes through this class, which checks `live` first — including pausing and
 * resuming the request body's socket.
 *
 * uWS's resume() also arms its HTTP idle timer (10 s, checked every 4 s: it fires 8–12 s later), meant
 * for a client that stops sending and reset only as body bytes arrive. A socket resumed after the whole
 * body is in gets no more bytes, so a request still being worked on 8–12 s later was closed with no
 * answer (a 499 "client left" in our log, a reset for the client). After such a resume the timer is
 * re-armed every few seconds until the response is over: Kuma, not the client, is the one taking time.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpResponse, us_socket_context_t } from 'uWebSockets.js';

/** uWS's cork buffer (LoopData::CORK_BUFFER_SIZE): a write that does not fit in it goes to the socket at once. */
const UWS_CORK_BUFFER_BYTES = 16 * 1024;
/** Bytes at the end of each chunk of a confirmed stream that are written one by one as probes (see above). */
const PROBE_BYTES = 16;
/**
 * How often a request's uWS idle timer is re-armed while Kuma works on it after its body's end: well
 * inside the 8 s the earliest firing leaves, even with the event loop a few seconds late.
 */
const IDLE_TIMER_REFRESH_MS = 2_000;

export class ResponseSink {
  private aborted = false;
  private headSent = false;
  private finished = false;
  private status = 0;
  private readonly abortWaiters = new Set<() => void>();
  /** Set by answerAndClose: the close that follows is ours, after a complete answer, not the client leaving. */
  private closedAfterAnswer = false;
  /** The one onWritable handler of this response wakes this waiter (see waitWritable). */
  private writableWaiter: (() => void) | null = null;
  private writableHooked = false;
  /** Streams whose delivery is confirmed: chunks end with probes (write), and `confirmed` says how the last went. */
  private confirming = false;
  private confirmed = false;
  private idleRefresh: NodeJS.Timeout | null = null;

  constructor(
    private readonly res: HttpResponse,
    private readonly stallTimeoutMs: number,
  ) {}

  get isAborted(): boolean {
    return this.aborted;
  }

  get hasStarted(): boolean {
    return this.headSent;
  }

  get isFinished(): boolean {
    return this.finished;
  }

  get statusCode(): number {
    return this.status;
  }

  /** True while `res` may still be touched: not aborted, not ended. */
  get live(): boolean {
    return !this.aborted && !this.finished;
  }

  /** The client's IP address as text (IPv6 in full, uncompressed); empty once the response is over. */
  remoteAddress(): string {
    return this.live ? Buffer.from(this.res.getRemoteAddressAsText()).toString('latin1') : '';
  }

  /** Pauses reading the request body (backpressure); a no-op once the response is over. */
  pauseSocket(): void {
    if (this.live) this.res.pause();
  }

  /** Resumes reading the request body; `bodyEnded` when it is all in (see the class comment). */
  resumeSocket(bodyEnded = false): void {
    if (!this.live) return;
    this.res.resume();
    if (bodyEnded) this.keepIdleTimerOff();
  }

  /**
   * Re-arms uWS's idle timer every IDLE_TIMER_REFRESH_MS until the response is over. pause() then
   * resume() is the one way uWS.js offers to set it: pause() saves the socket's poll events and resume()
   * restores them, so the pair changes nothing else (a lone resume() would set events saved from another
   * socket).
   */
  private keepIdleTimerOff(): void {
    if (this.idleRefresh) return;
    this.idleRefresh = setInterval(() => {
      if (!this.live) return this.stopIdleRefresh();
      this.res.pause();
      this.res.resume();
    }, IDLE_TIMER_REFRESH_MS);
    this.idleRefresh.unref();
  }

  private stopIdleRefresh(): void {
    if (this.idleRefresh) clearInterval(this.idleRefresh);
    this.idleRefresh = null;
  }

  /** Called from uWS onAborted: the socket is gone and `res` must not be touched again. */
  markAborted(): void {
    if (this.closedAfterAnswer) return;
    this.aborted = true;
    this.stopIdleRefresh();
    for (const wake of this.abortWaiters) wake();
    this.abortWaiters.clear();
  }

  /** Sends a complete response in one go. `closeConnection` drops keep-alive (used when a body went unread). */
  sendWhole(status: number, headers: Record<string, string>, body: string | Uint8Array, closeConnection = false, headOnly = false): void {
    if (this.aborted || this.finished) return;
    this.status = status;
    this.headSent = true;
    this.finished = true;
    this.stopIdleRefresh(); // from here uWS times the connection itself (keep-alive or close)
    this.res.cork(() => {
      this.writeHead(status, headers);
      if (headOnly) this.endHead(Buffer.byteLength(body as string), closeConnection);
      else this.res.end(body, closeConnection);
    });
  }

  /**
   * Ends a response that reports a length but sends no body (HEAD, 304). uWS's endWithoutBody(length)
   * writes the Content-Length but then waits for that many bytes that never come, so the next request on
   * the connection got no answer (a keep-alive client saw "socket hang up"). Called with no argument it
   * writes no Content-Length and completes the response, so the header is written here; when the
   * connection is to be closed anyway, the length form with its close is used.
   */
  private endHead(length: number, closeConnection: boolean): void {
    if (closeConnection) {
      this.res.endWithoutBody(length, true);
      return;
    }
    this.res.writeHeader('content-length', String(length));
    this.res.endWithoutBody();
  }

  /**
   * Sends a complete response and resolves true once all of it has left the process (the kernel has it),
   * false when the client left or stalled first. `closeConnection` (a body left unread) cannot be combined
   * with tryEnd here, so such a response is sent plainly and reported not confirmed.
   */
  async sendWholeDelivered(status: number, headers: Record<string, string>, body: string | Uint8Array, closeConnection = false): Promise<boolean> {
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    if (closeConnection || data.length === 0) {
      this.sendWhole(status, headers, data, closeConnection);
      return false;
    }
    if (!this.live) return false;
    this.status = status;
    this.headSent = true;
    const n = data.length;
    let ok = false;
    this.res.cork(() => {
      this.writeHead(status, headers);
      [ok] = this.res.tryEnd(data.subarray(0, n - 1), n);
    });
    // All but the last byte, at the kernel's pace. (Never tryEnd with nothing: uWS would end the response.)
    while (!ok) {
      if (!(await this.waitWritable())) return false;
      const offset = this.res.getWriteOffset();
      if (offset >= n - 1) break;
      this.res.cork(() => {
        [ok] = this.res.tryEnd(data.subarray(offset, n - 1), n);
      });
    }
    for (;;) {
      let done = false;
      this.res.cork(() => {
        [ok, done] = this.res.tryEnd(data.subarray(n - 1), n);
      });
      if (ok || done) {
        this.finished = true;
        return true;
      }
      if (!(await this.waitWritable())) return false;
    }
  }

  /** Starts a streamed response; headers leave with the first chunk. `confirming`: its delivery will be confirmed (endConfirmed). */
  begin(status: number, headers: Record<string, string>, confirming = false): void {
    if (this.aborted || this.finished || this.headSent) return;
    this.confirming = confirming;
    this.status = status;
    this.headSent = true;
    this.res.cork(() => this.writeHead(status, headers));
  }

  /** Writes a chunk; resolves false when the client is gone or stalled (stop producing). */
  async write(chunk: string | Uint8Array): Promise<boolean> {
    if (this.aborted || this.finished) return false;
    if (this.confirming) return this.writeConfirmed(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    let accepted = true;
    this.res.cork(() => {
      accepted = this.res.write(chunk);
    });
    if (accepted) return true;
    return this.waitWritable();
  }

  /**
   * A chunk whose last bytes are probes (see the header): `confirmed` is true when one was taken without
   * backpressure, i.e. everything before it had left the process. A refused probe's byte joins uWS's buffer,
   * and the next one goes after onWritable. All refused (a very slow reader): not confirmed, nothing lost.
   */
  private async writeConfirmed(bytes: Uint8Array): Promise<boolean> {
    this.confirmed = false;
    const split = Math.max(0, bytes.length - PROBE_BYTES);
    let accepted = true;
    if (split > 0) {
      this.res.cork(() => {
        accepted = this.res.write(bytes.subarray(0, split));
      });
    }
    for (let i = split; i < bytes.length; i++) {
      if (!accepted && !(await this.waitWritable())) return false;
      this.res.cork(() => {
        accepted = this.res.write(bytes.subarray(i, i + 1));
        if (accepted && i + 1 < bytes.length) this.res.write(bytes.subarray(i + 1));
      });
      if (accepted) {
        this.confirmed = true;
        return true;
      }
    }
    return accepted || this.waitWritable();
  }

  end(closeConnection = false): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.stopIdleRefresh();
    this.res.cork(() => this.res.end(undefined, closeConnection));
  }

  /** Ends a confirming stream: true when its last chunk was confirmed and the client is still there. */
  endConfirmed(closeConnection = false): boolean {
    const confirmed = this.confirmed && this.live;
    this.end(closeConnection);
    return confirmed;
  }

  /**
   * Completes a WebSocket upgrade (101) with these headers; uWS then calls the behaviour's `open`
   * synchronously. False when the client left before (nothing is sent).
   */
  upgrade(headers: Record<string, string>, userData: unknown, key: string, protocol: string, extensions: string, context: us_socket_context_t): boolean {
    if (this.aborted || this.finished) return false;
    this.status = 101;
    this.headSent = true;
    this.finished = true;
    this.stopIdleRefresh();
    // uWS sends custom headers on an upgrade only after an explicit 101 status line; they go out corked.
    this.res.cork(() => this.writeHead(101, headers));
    // The upgrade itself must not run inside res.cork(): after the callback, uWS's cork() reads the HTTP
    // response's state from the socket's memory, which the upgrade has just reallocated (in place) as a
    // WebSocket; when the stale bytes look like "Connection: close, response done" it closes the new
    // WebSocket (uNetworking/uWebSockets#1929). Seen here as sockets dropped (1006) right after `open`.
    // Uncorked, uWS prints a cork warning when this runs outside its callbacks; a lost socket is worse.
    this.res.upgrade(userData, key, protocol, extensions, context);
    return true;
  }

  /**
   * Answers and closes the connection before uWS reads another byte of it: for a request whose framing is
   * ambiguous (request-head.ts), where whatever follows on the connection may be a request smuggled past a
   * proxy. Must run inside uWS's request callback. uWS parses every request already read from the socket
   * as soon as the callback returns, even after end(body, closeConnection): that close waits until uWS
   * uncorks the socket at the end of the read. Only a closed socket stops it. Closing drops what is still
   * in uWS's cork buffer, so the answer is made larger than that buffer, which makes uWS write it to the
   * socket at once; a client that is not reading gets it cut short. The body is delimited by the close (no
   * Content-Length), padded with spaces (JSON allows them), and written with the head in one go.
   */
  answerAndClose(status: number, headers: Record<string, string>, body: string): void {
    if (this.aborted || this.finished) return;
    this.status = status;
    this.headSent = true;
    this.finished = true;
    let head = `${status} ${STATUS_CODES[status] ?? ''}\r\n`;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    head += 'connection: close\r\n\r\n';
    const padding = Math.max(0, UWS_CORK_BUFFER_BYTES + 1 - Buffer.byteLength(head) - Buffer.byteLength(body));
    // uWS writes `HTTP/1.1 `, then this, then a CRLF (part of the body, like the padding).
    this.res.cork(() => this.res.writeStatus(head + body + ' '.repeat(padding)));
    this.closedAfterAnswer = true;
    this.res.close();
  }

  /** Drops the connection without a proper end (used when the client stalls). */
  close(): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.stopIdleRefresh();
    this.res.close();
    this.markAborted();
  }

  private writeHead(status: number, headers: Record<string, string>): void {
    this.res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
    for (const name in headers) this.res.writeHeader(name, headers[name]!); // no [name, value] array per header
  }

  private waitWritable(): Promise<boolean> {
    // One onWritable handler per response, waking whoever waits now. A new handler for each wait does not
    // work with this uWS build: after two waits in a row on one response, the earlier handler was called
    // again instead of the new one, so the write waited until the stall timeout cut the client off.
    if (!this.writableHooked) {
      this.writableHooked = true;
      this.res.onWritable(() => {
        const wake = this.writableWaiter;
        this.writableWaiter = null;
        wake?.();
        return true;
      });
    }
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.abortWaiters.delete(onAbort);
        if (this.writableWaiter === onWritable) this.writableWaiter = null;
        resolve(ok);
      };
      const onAbort = () => settle(false);
      const onWritable = () => settle(this.live);
      const timer = setTimeout(() => {
        // The client has read nothing for too long: free the connection rather than queue more for it.
        this.close();
        settle(false);
      }, this.stallTimeoutMs);
      this.abortWaiters.add(onAbort);
      this.writableWaiter = onWritable;
    });
  }
}
