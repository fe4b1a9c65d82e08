/**
 * The fuzz's pass/fail rules (load-tests/fuzz/outcomes.ts) for the answers the server must give: the error
 * shape per surface (the envelope on the primary surface, `{detail}` on the native one) and the WebSocket
 * close codes. A rule that let a wrong shape or an internal-error close through would hide a real failure.
 */
import { describe, expect, it } from 'vitest';
import { classifyClose, classifyHttp } from '../../../load-tests/fuzz/outcomes.js';
import { errorShapeOf } from '../../../load-tests/fuzz/native-requests.js';

const noHeaders = { get: () => null };
const envelope = JSON.stringify({ error: { message: 'm', type: 'invalid_request_error', param: null, code: 'invalid_value' } });
const entries = JSON.stringify({ detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing', input: null }] });

describe('fuzz outcome rules', () => {
  it('a path under /v1, /v2, /api/v1 or /api/v2 must answer the native shape; the primary prefixes the envelope', () => {
    expect(['/v1/models/tts', '/api/v2/models/transcribe?translate_to_french=1'].map(errorShapeOf)).toEqual(['native', 'native']);
    expect(['/openai/v1/audio/speech', '/compat/v1/models'].map(errorShapeOf)).toEqual(['envelope', 'envelope']);
  });

  it('native 4xx: {detail: string} or well-formed entries pass; the envelope, empty or malformed entries do not', () => {
    expect(classifyHttp(422, noHeaders, entries, 'native').kind).toBe('4xx');
    expect(classifyHttp(401, noHeaders, '{"detail":"You didn\'t provide an API key."}', 'native').kind).toBe('4xx');
    expect(classifyHttp(400, noHeaders, envelope, 'native').kind).toBe('bad-envelope');
    expect(classifyHttp(422, noHeaders, '{"detail":[]}', 'native').kind).toBe('bad-envelope');
    expect(classifyHttp(422, noHeaders, '{"detail":[{"loc":"body","msg":"x","type":"missing"}]}', 'native').kind).toBe('bad-envelope');
    expect(classifyHttp(400, noHeaders, entries, 'envelope').kind).toBe('bad-envelope');
  });

  it('native 410: the envelope with code endpoint_retired and detail beside it', () => {
    const retired = JSON.stringify({ error: { message: 'gone', type: 'invalid_request_error', param: null, code: 'endpoint_retired' }, detail: 'gone' });
    expect(classifyHttp(410, noHeaders, retired, 'native').kind).toBe('4xx');
    expect(classifyHttp(410, noHeaders, '{"detail":"gone"}', 'native').kind).toBe('bad-envelope');
  });

  it('WebSocket closes: documented codes pass; 1011, 1006 without a cause and other codes fail', () => {
    const plain = { droppable: false, carrier: false };
    for (const code of [1000, 1001, 1008, 1009, 1013, 4001]) expect(classifyClose(code, '', plain).kind).toBe('ws-closed');
    expect(classifyClose(1011, 'server_error', plain).kind).toBe('ws-1011');
    expect(classifyClose(1011, 'app_unreachable', plain).kind).toBe('ws-1011');
    expect(classifyClose(1011, 'app_unreachable', { droppable: false, carrier: true }).kind).toBe('ws-closed');
    expect(classifyClose(1006, '', plain).kind).toBe('ws-bad-close');
    expect(classifyClose(1006, '', { droppable: true, carrier: false }).kind).toBe('ws-dropped');
    expect(classifyClose(1002, '', plain).kind).toBe('ws-bad-close');
  });
});
