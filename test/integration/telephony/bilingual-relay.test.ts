/**
 * The bilingual bridge end to end: a French-speaking ConversationRelay app serves a Bambara caller. The
 * caller's turn reaches the app translated (banjugu-1), with the Bambara beside it; the app's French reply is
 * translated before synthesis, so the caller hears Bambara; both texts of each turn and each reply are logged.
 * The demo translator maps a glossary word by word (models/generator/demo-nllb.ts), so the translations are exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { startRelayApp, wordByWordApp, type RelayApp } from '../../helpers/relay-app.js';
import { callerSpeech, dialCarrier, mintToken, startTelephonyServer, transcribePhone } from '../../helpers/telephony.js';

const CALLER_BAM = 'fa ni ba ye den ye';
const CALLER_FRA = 'père ni mère voir enfant voir';
const REPLY_FRA = 'oui mère';
const REPLY_BAM = 'ɔwɔ ba';

let t: TestServer;
let app: RelayApp;
beforeAll(async () => {
  t = await startTelephonyServer();
  app = await startRelayApp(wordByWordApp(() => REPLY_FRA));
}, 120_000);
afterAll(async () => {
  await app.close();
  await t.close();
});

describe('bilingual bridge (French app, Bambara caller)', () => {
  it('Bambara caller → French prompt with the Bambara beside it; French reply → Bambara audio; both logged; translation billed', async () => {
    const token = await mintToken(t, { relay_url: app.url, language: 'fr-FR' });
    const speech = await callerSpeech(t, CALLER_BAM);
    const connection = app.nextConnection();
    const { call, closed } = await dialCarrier(t, 'twilio', { token });
    const relay = await connection;
    await call.silence(300);
    await call.speak(speech);
    await call.silence(1200);
    const prompt = (await relay.next('prompt')).json;
    expect(prompt).toEqual({ type: 'prompt', voicePrompt: CALLER_FRA, lang: 'fr-FR', last: true, original: { lang: 'bm-ML', voicePrompt: CALLER_BAM } });
    await call.waitFor((log) => log.marks.length > 0 && log.marks.every((m) => m.echoedAt !== null), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(call.log.protocolErrors).toEqual([]);
    expect(await transcribePhone(t, call.receivedPcm())).toBe(REPLY_BAM);
    call.hangup();
    await closed;
    const logs = t.logs.map((line) => JSON.parse(line));
    expect(logs.find((l) => l.msg === 'call turn translated')).toMatchObject({ heard: CALLER_BAM, app: CALLER_FRA, language: 'fra' });
    expect(logs.find((l) => l.msg === 'call reply translated')).toMatchObject({ app: REPLY_FRA, spoken: REPLY_BAM, language: 'fra' });
    await expect.poll(async () => (await t.server.store.listCalls({ accountId: t.accountId })).length, { timeout: 10_000 }).toBe(1);
    const [record] = await t.server.store.listCalls({ accountId: t.accountId });
    expect(record).toMatchObject({
      turns: 1,
      charactersTranslated: [...CALLER_BAM].length + [...REPLY_FRA].length,
      charactersSynthesized: [...REPLY_BAM].length,
    });
    const rows = await t.server.store.listUsage({ requestId: record!.id });
    const byModel = (model: string) => rows.filter((r) => r.model === model).reduce((n, r) => n + r.quantity, 0);
    expect(byModel('banjugu-1')).toBe([...CALLER_BAM].length + [...REPLY_FRA].length);
    expect(byModel('jifili-1')).toBe([...REPLY_BAM].length);
    expect(byModel('sunjata-1')).toBeGreaterThan(0);
  }, 60_000);
});
