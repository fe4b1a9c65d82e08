import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RelayMessageError } from '../../../../src/telephony/relay/relay-errors.js';
import { interruptMessage, invalidMessageDescription, parseAppMessage, promptMessage, setupMessage } from '../../../../src/telephony/relay/relay-messages.js';

function errorOf(text: string): RelayMessageError {
  try {
    parseAppMessage(text);
  } catch (error) {
    expect(error).toBeInstanceOf(RelayMessageError);
    return error as RelayMessageError;
  }
  throw new Error(`parsed: ${text}`);
}

describe('parseAppMessage: the messages ConversationRelay apps send (Twilio and Telnyx examples)', () => {
  it('text tokens, with and without the optional fields', () => {
    expect(parseAppMessage('{"type":"text","token":"Hello","last":false}')).toEqual({ type: 'text', token: 'Hello', last: false });
    expect(parseAppMessage('{"type":"text","token":"Ahoy!","last":true,"lang":"fr-FR","interruptible":false,"preemptible":true}')).toEqual({
      type: 'text',
      token: 'Ahoy!',
      last: true,
      lang: 'fr-FR',
      interruptible: 'none',
      preemptible: true,
    });
  });

  it('a talk cycle closed by an empty token; a token without `last` means more is coming', () => {
    expect(parseAppMessage('{"type":"text","token":"","last":true}')).toMatchObject({ token: '', last: true });
    expect(parseAppMessage('{"type":"text","token":"Hi"}')).toMatchObject({ last: false });
  });

  it('interruptible as a boolean (true = any) or one of none|dtmf|speech|any', () => {
    expect(parseAppMessage('{"type":"text","token":"a","interruptible":true}')).toMatchObject({ interruptible: 'any' });
    expect(parseAppMessage('{"type":"text","token":"a","interruptible":"dtmf"}')).toMatchObject({ interruptible: 'dtmf' });
  });

  it('play, sendDigits, language and end', () => {
    expect(parseAppMessage('{"type":"play","source":"https://example.com/audio/welcome.mp3"}')).toEqual({
      type: 'play',
      source: 'https://example.com/audio/welcome.mp3',
    });
    expect(parseAppMessage('{"type":"play","source":"https://api.twilio.com/cowbell.mp3","loop":2,"preemptible":false,"interruptible":true}')).toEqual({
      type: 'play',
      source: 'https://api.twilio.com/cowbell.mp3',
      loop: 2,
      preemptible: false,
      interruptible: 'any',
    });
    expect(parseAppMessage('{"type":"sendDigits","digits":"9www4085551212"}')).toEqual({ type: 'sendDigits', digits: '9www4085551212' });
    expect(parseAppMessage('{"type":"sendDigits","digits":"1234#"}')).toEqual({ type: 'sendDigits', digits: '1234#' });
    expect(parseAppMessage('{"type":"language","ttsLanguage":"es-ES","transcriptionLanguage":"es-ES"}')).toEqual({
      type: 'language',
      ttsLanguage: 'es-ES',
      transcriptionLanguage: 'es-ES',
    });
    expect(parseAppMessage('{"type":"end"}')).toEqual({ type: 'end' });
    expect(parseAppMessage('{"type":"end","handoffData":"{\\"reasonCode\\":\\"live-agent-handoff\\"}"}')).toEqual({
      type: 'end',
      handoffData: '{"reasonCode":"live-agent-handoff"}',
    });
  });

  it('ignores fields it does not know (apps send extras; Twilio adds fields)', () => {
    expect(parseAppMessage('{"type":"text","token":"x","last":true,"requestId":7}')).toEqual({ type: 'text', token: 'x', last: true });
  });

  it('an object handoffData is stringified rather than refused (refusing `end` would keep the call up)', () => {
    expect(parseAppMessage('{"type":"end","handoffData":{"reason":"agent"}}')).toEqual({ type: 'end', handoffData: '{"reason":"agent"}' });
  });
});

describe('parseAppMessage: clear errors for what it cannot use', () => {
  it.each([
    ['not json', 'invalid_json', null, 'not valid JSON'],
    ['[1,2]', 'invalid_json', null, 'JSON object'],
    ['{"token":"x"}', 'unknown_type', 'type', 'needs a string "type"'],
    ['{"type":"speak","text":"x"}', 'unknown_type', 'type', 'unknown message type "speak"; expected one of text, play, sendDigits, language, end'],
    ['{"type":"constructor"}', 'unknown_type', 'type', 'unknown message type "constructor"'],
    ['{"type":"text","last":true}', 'invalid_message', 'token', 'text: "token" is required'],
    ['{"type":"text","token":5,"last":true}', 'invalid_message', 'token', 'text: "token" must be a string'],
    ['{"type":"text","token":"a","last":"yes"}', 'invalid_message', 'last', '"last" must be a boolean'],
    [
      '{"type":"text","token":"a","interruptible":"sometimes"}',
      'invalid_message',
      'interruptible',
      'must be a boolean or one of "none", "dtmf", "speech", "any"',
    ],
    ['{"type":"play","source":"file:///etc/passwd"}', 'invalid_message', 'source', 'absolute http:// or https:// URL'],
    ['{"type":"play","source":"https://a.example/x.wav","loop":1.5}', 'invalid_message', 'loop', '"loop" must be an integer'],
    ['{"type":"play","source":"https://a.example/x.wav","loop":-1}', 'invalid_message', 'loop', '"loop" must be at least 0'],
    ['{"type":"sendDigits","digits":"12a"}', 'invalid_message', 'digits', 'must be 1 to 256 of 0-9, *, #, w'],
    ['{"type":"language"}', 'invalid_message', null, 'needs ttsLanguage or transcriptionLanguage'],
    ['{"type":"end","handoffData":5}', 'invalid_message', 'handoffData', '"handoffData" must be a string'],
  ])('%s → %s', (text, code, param, message) => {
    const error = errorOf(text);
    expect(error.code).toBe(code);
    expect(error.param).toBe(param);
    expect(error.message).toContain(message);
  });

  it('the error description Kuma sends back names the problem and quotes (a bounded excerpt of) the message', () => {
    const raw = JSON.stringify({ type: 'speak', pad: 'x'.repeat(1000) });
    const description = invalidMessageDescription(errorOf(raw), raw);
    expect(description.startsWith('Invalid message received: unknown message type "speak"')).toBe(true);
    expect(description.length).toBeLessThan(400);
  });

  it('property: any string, and any JSON value, either parses or throws a RelayMessageError', () => {
    const check = (text: string) => {
      try {
        const message = parseAppMessage(text);
        expect(['text', 'play', 'sendDigits', 'language', 'end']).toContain(message.type);
      } catch (error) {
        expect(error).toBeInstanceOf(RelayMessageError);
        expect((error as Error).message.length).toBeGreaterThan(0);
      }
    };
    fc.assert(fc.property(fc.string(), check), { numRuns: 300 });
    fc.assert(fc.property(fc.json(), check), { numRuns: 300 });
    const field = fc.oneof(fc.jsonValue(), fc.constant(undefined));
    const shaped = fc.record(
      {
        type: fc.constantFrom('text', 'play', 'sendDigits', 'language', 'end', 'prompt', '__proto__', 'toString'),
        token: field,
        last: field,
        lang: field,
        interruptible: field,
        preemptible: field,
        source: fc.oneof(field, fc.webUrl()),
        loop: field,
        digits: field,
        ttsLanguage: field,
        transcriptionLanguage: field,
        handoffData: field,
      },
      { requiredKeys: ['type'] },
    );
    fc.assert(
      fc.property(shaped, (value) => check(JSON.stringify(value))),
      { numRuns: 1000 },
    );
  });
});

describe('messages Kuma sends to the app', () => {
  it('setup carries every Twilio field, empty strings where Kuma has no value', () => {
    const setup = setupMessage({
      sessionId: 'VX1',
      callSid: 'CA1',
      from: '+22370000000',
      to: '+22320000000',
      direction: 'inbound',
      customParameters: { callReference: 'bar' },
    });
    expect(setup).toEqual({
      type: 'setup',
      sessionId: 'VX1',
      accountSid: '',
      parentCallSid: '',
      callSid: 'CA1',
      from: '+22370000000',
      to: '+22320000000',
      forwardedFrom: '',
      callType: '',
      callerName: '',
      direction: 'inbound',
      callStatus: '',
      applicationSid: '',
      customParameters: { callReference: 'bar' },
    });
  });

  it('prompt, with the original Bambara beside a translated prompt only when there is one', () => {
    expect(promptMessage({ voicePrompt: 'Bonjour', lang: 'fr-FR', last: true })).toEqual({ type: 'prompt', voicePrompt: 'Bonjour', lang: 'fr-FR', last: true });
    expect(promptMessage({ voicePrompt: 'Bonjour', lang: 'fr-FR', last: true, original: { lang: 'bm-ML', voicePrompt: 'I ni ce' } })).toEqual({
      type: 'prompt',
      voicePrompt: 'Bonjour',
      lang: 'fr-FR',
      last: true,
      original: { lang: 'bm-ML', voicePrompt: 'I ni ce' },
    });
  });

  it('interrupt carries a whole, non-negative number of milliseconds', () => {
    expect(interruptMessage('Life is a complex set of', 460.4)).toEqual({
      type: 'interrupt',
      utteranceUntilInterrupt: 'Life is a complex set of',
      durationUntilInterruptMs: 460,
    });
    expect(interruptMessage('', -5).durationUntilInterruptMs).toBe(0);
    expect(interruptMessage('', Number.NaN).durationUntilInterruptMs).toBe(0);
  });
});
