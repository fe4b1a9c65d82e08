/**
 * Requests built to hurt the server (P6 items 2, 5, 6): a chunked upload over the limit, made-up methods
 * that would each add a metrics series, and ambiguous framing that a proxy could read differently.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { maxUploadBytes: 1_000_000 } });
});
afterAll(() => t.close());

/** Sends raw bytes and collects the answer until the server closes or `waitMs` passes. */
function raw(request: string | Buffer, waitMs = 2000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(t.server.port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => (socket.destroy(), resolve({ text, closed: false })), waitMs);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => (clearTimeout(timer), resolve({ text, closed: true })));
    socket.write(request);
  });
}

function chunked(body: Buffer, size = 65536): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) {
    const piece = body.subarray(i, i + size);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

describe('hostile HTTP', () => {
  it('a chunked multipart upload over the limit gets 413 and the process keeps serving', async () => {
    const boundary = 'kuma-boundary';
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsunjata-1\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n`,
      ),
      Buffer.alloc(8_000_000, 7),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    for (let i = 0; i < 3; i++) {
      const head = `POST /openai/v1/audio/transcriptions HTTP/1.1\r\nHost: kuma\r\nAuthorization: Bearer ${t.apiKey}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
      const answer = await raw(Buffer.concat([Buffer.from(head), chunked(body)]), 10_000);
      expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer.text).toContain('"code":"audio_too_large"');
    }
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
  }, 60_000);

  it('made-up methods are counted under one `other` label, so /metrics cannot be blown up', async () => {
    for (let i = 0; i < 300; i++) {
      const answer = await raw(`XM${i.toString(36).toUpperCase()} /healthz HTTP/1.1\r\nHost: kuma\r\nConnection: close\r\n\r\n`);
      expect(answer.text).toMatch(/^HTTP\/1\.1 405 /);
    }
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).not.toMatch(/method="XM/);
    expect(metrics).toMatch(/kuma_http_requests_total\{method="other",route="unmatched",status="405"\} 300/);
    const methods = new Set([...metrics.matchAll(/method="([^"]*)"/g)].map((m) => m[1]));
    for (const method of methods) expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other']).toContain(method);
  });

  it('methods are case-sensitive: a lower-case `get` is not GET', async () => {
    const answer = await raw(`get /healthz HTTP/1.1\r\nHost: kuma\r\nConnection: close\r\n\r\n`);
    expect(answer.text).toMatch(/^HTTP\/1\.1 405 /);
    expect(answer.text).toContain('"code":"method_not_allowed"');
  });

  it('unknown paths and models do not become label values either', async () => {
    for (let i = 0; i < 50; i++) {
      await fetch(`${t.baseUrl}/made/up/${i}`);
      await fetch(`${t.baseUrl}/openai/v1/models/made-up-${i}`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    }
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).not.toMatch(/made/);
  });

  it('conflicting Content-Length headers are refused with a 400 envelope and the connection is closed', async () => {
    const answer = await raw(
      `POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nContent-Length: 5\r\nContent-Length: 6\r\nContent-Type: application/json\r\n\r\n{"a":1}`,
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.text).toContain('"code":"malformed_request"');
    expect(answer.text).toMatch(/x-request-id: req_/i);
    expect(answer.closed).toBe(true);
  });

  it('a Content-Length that is not a plain number is refused the same way', async () => {
    for (const value of ['5, 6', '+5', '0x5']) {
      const answer = await raw(`POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nContent-Length: ${value}\r\n\r\nhello`);
      expect(answer.text, value).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer.closed).toBe(true);
    }
  });

  it('identical repeated Content-Length headers are refused too (a proxy may not read them as one; request-smuggling.test.ts)', async () => {
    const answer = await raw(
      `POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nContent-Length: 2\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}`,
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.text).toContain('"code":"malformed_request"');
    expect(answer.closed).toBe(true);
  });

  it('HEAD reports the GET length once, sends no body and leaves the connection usable (pipelined GET answered)', async () => {
    const answer = await raw('HEAD /healthz HTTP/1.1\r\nHost: kuma\r\n\r\nGET /healthz HTTP/1.1\r\nHost: kuma\r\nConnection: close\r\n\r\n');
    const [head, get] = answer.text.split(/(?=HTTP\/1\.1 )/);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head!.match(/content-length: (\d+)/gi)).toHaveLength(1);
    const length = Number(/content-length: (\d+)/i.exec(head!)![1]);
    expect(head!.endsWith('\r\n\r\n')).toBe(true); // headers only
    expect(get).toMatch(/^HTTP\/1\.1 200 /);
    expect(get!.split('\r\n\r\n')[1]).toHaveLength(length);
  });

  it('Content-Length together with Transfer-Encoding is refused and the connection closed', async () => {
    const answer = await raw(
      `POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.closed).toBe(true);
  });
});
