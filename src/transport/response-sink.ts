/**
 * Writes one HTTP response through uWebSockets.js: every write is corked (uWS requires it outside its
 * own callbacks), a streamed write that meets backpressure waits for `onWritable` before the next one,
 * and a client that reads nothing for `stallTimeoutMs` is disconnected. So at most one chunk beyond the
 * socket buffers is ever queued toward a slow client.
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

  /** Starts a streamed response; headers leave with the first chunk. */
  begin(status: number, headers: Record<string, string>): void {
    if (this.aborted || this.finished || this.headSent) return;
    this.status = status;
    this.headSent = true;
    this.res.cork(() => this.writeHead(status, headers));
  }

  /** Writes a chunk; resolves false when the client is gone or stalled (stop producing). */
  async write(chunk: string | Uint8Array): Promise<boolean> {
    if (this.aborted || this.finished) return false;
    let accepted = true;
    this.res.cork(() => {
      accepted = this.res.write(chunk);
    });
    if (accepted) return true;
    return this.waitWritable();
  }

  end(closeConnection = false): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.stopIdleRefresh();
    this.res.cork(() => this.res.end(undefined, closeConnection));
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
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.abortWaiters.delete(onAbort);
        resolve(ok);
      };
      const onAbort = () => settle(false);
      const timer = setTimeout(() => {
        // The client has read nothing for too long: free the connection rather than queue more for it.
        this.close();
        settle(false);
      }, this.stallTimeoutMs);
      this.abortWaiters.add(onAbort);
      this.res.onWritable(() => {
        settle(this.live);
        return true;
      });
    });
  }
}
