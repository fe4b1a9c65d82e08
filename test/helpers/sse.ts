/**
 * Server-sent events read as a client reads them: with eventsource-parser, the parser the design names,
 * instead of splitting the text on blank lines. Strict, as a test should be: a line the format does not
 * know, or a stream that ends in the middle of an event (which an EventSource would drop), fails the read.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** Every event of a whole stream, in order. */
export function sseEvents(stream: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const problems: string[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event), onError: (error) => problems.push(error.message) });
  parser.feed(stream);
  const complete = events.length;
  // Ending the last line and the event dispatches whatever was left unterminated: only to report it.
  parser.feed('\n\n');
  if (events.length > complete) problems.push(`the stream ends inside an event: ${JSON.stringify(events.slice(complete).map((e) => e.data)).slice(0, 200)}`);
  if (problems.length > 0) throw new Error(`not a valid event stream: ${problems.join('; ')}`);
  return events.slice(0, complete);
}

/** The `data` of each event: JSON where it parses, else the text itself (`[DONE]`). */
export function sseData(stream: string): unknown[] {
  return sseEvents(stream).map(({ data }) => {
    try {
      return JSON.parse(data) as unknown;
    } catch {
      return data;
    }
  });
}

/** The JSON payloads of a stream that ends with OpenAI's `[DONE]`, or has none: every other event must be JSON. */
export function sseJson<T = Record<string, any>>(stream: string): T[] {
  const events = sseEvents(stream);
  const payloads = events.at(-1)?.data === '[DONE]' ? events.slice(0, -1) : events;
  return payloads.map(({ data }) => JSON.parse(data) as T);
}
