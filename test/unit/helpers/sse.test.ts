/**
 * The event-stream reader the tests and load tests share (test/helpers/sse.ts): whatever JSON payloads a
 * stream carries, and however its lines end, it gives them back in order; a stream cut inside an event, or a
 * line the format does not know, is refused rather than read leniently.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sseData, sseEvents, sseJson } from '../../helpers/sse.js';

const payloads = fc.array(fc.jsonValue(), { maxLength: 20 });

describe('sseEvents / sseData / sseJson', () => {
  it('give back every payload in order, with \\n or \\r\\n line ends, comments and named events', () => {
    fc.assert(
      fc.property(payloads, fc.constantFrom('\n', '\r\n'), (values, eol) => {
        const stream =
          `: comment${eol}${eol}` + values.map((v, i) => `event: e${i}${eol}data: ${JSON.stringify(v)}${eol}${eol}`).join('') + `data: [DONE]${eol}${eol}`;
        expect(sseJson(stream)).toEqual(values.map((v) => JSON.parse(JSON.stringify(v))));
        expect(sseData(stream).at(-1)).toBe('[DONE]');
        expect(
          sseEvents(stream)
            .slice(0, -1)
            .map((e) => e.event),
        ).toEqual(values.map((_, i) => `e${i}`));
      }),
    );
  });

  it('join the data lines of one event with newlines', () => {
    expect(sseEvents('data: a\ndata: b\n\n').map((e) => e.data)).toEqual(['a\nb']);
  });

  it('refuse a stream that ends inside an event, and an unknown field', () => {
    expect(() => sseEvents('data: {"a":1}\n\ndata: {"b"')).toThrow(/ends inside an event/);
    expect(() => sseEvents('data: {"a":1}\n\ndata: {"b":2}\n')).toThrow(/ends inside an event/);
    expect(() => sseEvents('delta: x\n\n')).toThrow(/not a valid event stream/);
  });
});
