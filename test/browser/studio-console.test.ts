/**
 * Kuma Studio's console in real Chromium against a real server: an API key is refused (403), an admin key
 * signs in; the page lists accounts, credits one, creates a key that then works with curl, draws the
 * account's usage, and revokes the key, after which curl is refused. The admin key stays out of URLs,
 * storage and logs.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startRealtimeServer } from '../helpers/realtime.js';
import { createAdminKey } from '../helpers/admin.js';
import { formatUnits } from '../../src/billing/units.js';
import { browserRequired, findChromium, launchChromium, screenshotDir } from '../helpers/browser.js';

const run = promisify(execFile);
const chromium = findChromium();

let t: TestServer;
let browser: Browser;
let page: Page;
let adminKey: string;
const urlsSeen: string[] = [];

/** What curl gets from GET /openai/v1/models with this key: the HTTP status. */
async function curlStatus(apiKey: string): Promise<number> {
  const { stdout } = await run('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '-H',
    `Authorization: Bearer ${apiKey}`,
    `${t.baseUrl}/openai/v1/models`,
  ]);
  return Number(stdout);
}

const status = (selector: string) => page.$eval(selector, (node) => node.textContent ?? '');

describe.skipIf(!chromium && !browserRequired)('Kuma Studio in Chromium: the console', () => {
  beforeAll(async () => {
    // With the demo models, so the console shows them ready.
    t = await startRealtimeServer({ config: { studio: true } });
    adminKey = (await createAdminKey(t.server.store)).adminKey;
    // Usage today on the test account, for the chart.
    await t.server.store.recordUsage([
      {
        requestId: 'req_console_1',
        accountId: t.accountId,
        keyId: 'key_x',
        model: 'sunjata-1',
        unit: 'second',
        quantity: 12,
        unitPriceMicros: 100,
        costMicros: 1200,
      },
    ]);
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('request', (request) => urlsSeen.push(request.url()));
    page.on('dialog', (dialog) => void dialog.accept());
    await browser.defaultBrowserContext().overridePermissions(t.baseUrl, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
    await page.setViewport({ width: 1000, height: 1100 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('refuses an API key, and signs in with an admin key', async () => {
    await page.goto(`${t.baseUrl}/#console`, { waitUntil: 'load' });
    expect(await page.$eval('#view-console', (n) => (n as HTMLElement).hidden)).toBe(false);
    await page.type('#admin-key', t.apiKey);
    await page.click('#admin-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#admin-status')?.textContent?.startsWith('This key may not do that.'));
    expect(await page.$eval('#console-body', (n) => (n as HTMLElement).hidden)).toBe(true);

    await page.type('#admin-key', adminKey);
    await page.click('#admin-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#admin-status')?.textContent?.startsWith('Signed in with admin key adm_'));
    await page.waitForSelector('#accounts tbody tr');
    expect(await page.$$eval('#accounts tbody tr', (rows) => rows.map((r) => r.cells[0]!.textContent))).toContain(`test (${t.accountId})`);
  });

  it('credits an account, creates a key that works with curl, shows usage, and revokes the key', async () => {
    await page.click(`#accounts tbody button[aria-label="Open account test"]`);
    await page.waitForFunction(() => !(document.querySelector('#account-detail') as HTMLElement).hidden);
    const before = await status('#account-heading');
    await page.type('#credit-amount', '2.5');
    await page.click('#credit-form button[type=submit]');
    await page.waitForFunction((text) => document.querySelector('#account-heading')?.textContent !== text, {}, before);
    const balance = (await t.server.store.getAccount(t.accountId))!.balanceMicros;
    expect(await status('#account-heading')).toContain(`balance ${formatUnits(balance)}`);

    await page.type('#new-key-label', 'made in the browser');
    await page.click('#new-key-form button[type=submit]');
    await page.waitForFunction(() => /^[0-9a-f-]{36}$/.test(document.querySelector('#new-key-value')?.textContent ?? ''));
    const apiKey = await status('#new-key-value');
    expect(await curlStatus(apiKey)).toBe(200);
    // The one-time key has a copy button that puts it on the clipboard.
    await page.click('#new-key-copy');
    await page.waitForFunction(() => document.querySelector('#new-key-copied')?.textContent === 'Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(apiKey);
    await page.click('#new-key-hide');
    expect(await status('#new-key-value')).toBe('');

    // The usage chart: 30 bars, the one with usage drawn, and a caption that sums them.
    expect(await page.$$eval('#usage-chart rect', (bars) => bars.length)).toBe(30);
    expect(await page.$$eval('#usage-chart rect', (bars) => bars.filter((b) => Number(b.getAttribute('height')) > 0).length)).toBe(1);
    expect(await status('#usage-caption')).toMatch(/^0\.001200 units spent from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d, on 1 of 30 days; 1 request\.$/);
    // Axes: the cost in units at 0, half and the peak, and dates below.
    expect(await page.$$eval('#usage-chart .tick-cost', (labels) => labels.map((l) => l.textContent))).toEqual(['0.0000', '0.0006', '0.0012']);
    expect(await page.$$eval('#usage-chart .tick-date', (labels) => labels.length)).toBe(3);
    expect(await page.$$eval('#usage-chart line.axis', (lines) => lines.length)).toBeGreaterThanOrEqual(2);
    await page.waitForSelector('#readiness li');
    expect(await page.$$eval('#readiness li', (items) => items.map((i) => i.textContent))).toEqual(['sunjata-1: ready', 'jifili-1: ready', 'banjugu-1: ready']);
    await page.screenshot({ path: path.join(screenshotDir(), 'studio-console.png'), fullPage: true });

    const keyId = await page.$$eval('#keys tbody tr', (rows) => rows.find((r) => r.cells[1]?.textContent === 'made in the browser')?.cells[0]?.textContent);
    await page.click(`#keys button[aria-label="Revoke key ${keyId}"]`);
    await page.waitForFunction(
      (id) =>
        [...document.querySelectorAll('#keys tbody tr')].some(
          (r) => (r as HTMLTableRowElement).cells[0]?.textContent === id && (r as HTMLTableRowElement).cells[3]?.textContent?.startsWith('revoked'),
        ),
      {},
      keyId,
    );
    expect(await curlStatus(apiKey)).toBe(401);
  });

  it('shows the latest charges, sets rate limits and a webhook, and puts them back', async () => {
    const charges = await page.$$eval('#usage-records tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
    expect(charges).toEqual([[expect.any(String), 'sunjata-1', '12 seconds', '0.001200 units', 'key_x']]);

    expect(await page.$eval('#limits-subject', (n) => (n as HTMLSelectElement).value)).toBe(t.accountId);
    await page.type('#limit-rpm', '5');
    await page.click('#limits-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#limits-summary')?.textContent?.startsWith('In force: 5 requests/min'));
    expect(await t.server.store.getRateLimits(t.accountId)).toEqual({ requestsPerMinute: 5, tokensPerMinute: null, concurrent: null });
    await page.click('#limits-reset');
    await page.waitForFunction(() => document.querySelector('#console-status')?.textContent?.includes('back to the defaults'));
    expect(await t.server.store.getRateLimits(t.accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
    expect(await page.$eval('#limit-rpm', (n) => (n as HTMLInputElement).value)).toBe('');

    await page.type('#webhook-url', 'https://example.com/kuma-events');
    await page.click('#webhook-form button[type=submit]');
    await page.waitForFunction(() => !(document.querySelector('#webhook-secret') as HTMLElement).hidden);
    const secret = await status('#webhook-secret-value');
    expect(await t.server.store.getWebhook(t.accountId)).toMatchObject({ url: 'https://example.com/kuma-events', secret });
    await page.click('#webhook-secret-hide');
    await page.click('#webhook-clear');
    await page.waitForFunction(() => document.querySelector('#console-status')?.textContent?.startsWith('Webhook removed'));
    expect(await t.server.store.getWebhook(t.accountId)).toBeUndefined();
    for (const line of t.logs) expect(line).not.toContain(secret);
  });

  it('fits a phone (390×844): no sideways scroll, and no word broken in its tables, labels or buttons', async () => {
    await page.setViewport({ width: 390, height: 844 });
    try {
      // Long content the tables must hold: a key with a long label, an account with a long name.
      await page.type('#new-key-label', 'a rather long label for a key');
      await page.click('#new-key-form button[type=submit]');
      await page.waitForFunction(() => !(document.querySelector('#new-key') as HTMLElement).hidden);
      await page.waitForFunction(() => [...document.querySelectorAll('#keys tbody td')].some((td) => td.textContent === 'a rather long label for a key'));
      await page.screenshot({ path: path.join(screenshotDir(), 'studio-console-phone.png'), fullPage: true });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const broken = await page.evaluate(() => {
        const found: string[] = [];
        for (const node of document.querySelectorAll(
          '#view-console th, #view-console td, #view-console label, #view-console button, #view-console select, #view-console h2, #view-console h3, #view-console caption',
        )) {
          const box = (node as HTMLElement).getBoundingClientRect();
          if (box.right > 390 + 0.5) found.push(`${node.tagName} overflows: ${(node.textContent ?? '').trim().slice(0, 40)}`);
          const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
          for (let text = walker.nextNode(); text; text = walker.nextNode()) {
            for (const match of (text.textContent ?? '').matchAll(/\S+/g)) {
              const range = document.createRange();
              range.setStart(text, match.index!);
              range.setEnd(text, match.index! + match[0].length);
              // A word on two lines has two boxes (hidden nodes have none).
              if (new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1) found.push(`${node.tagName}: ${match[0]}`);
            }
          }
        }
        return found;
      });
      expect(broken).toEqual([]);
      await page.click('#new-key-hide');
    } finally {
      await page.setViewport({ width: 1000, height: 1100 });
    }
  });

  it('follows the address bar and back/forward between Try it and the console', async () => {
    await page.click('#tab-try');
    expect(page.url()).toBe(`${t.baseUrl}/`);
    expect(await page.$eval('#view-try', (n) => (n as HTMLElement).hidden)).toBe(false);
    await page.goBack();
    await page.waitForFunction(() => !(document.querySelector('#view-console') as HTMLElement).hidden);
    await page.goForward();
    await page.waitForFunction(() => !(document.querySelector('#view-try') as HTMLElement).hidden);
    // Typed into the address bar: the fragment changes, the page does not reload.
    await page.evaluate(() => (location.hash = '#console'));
    await page.waitForFunction(
      () => !(document.querySelector('#view-console') as HTMLElement).hidden && (document.querySelector('#view-try') as HTMLElement).hidden,
    );
    expect(await page.$eval('#console-body', (n) => (n as HTMLElement).hidden)).toBe(false); // still signed in: no reload
  });

  it('keeps the admin key out of URLs, storage and logs', async () => {
    for (const url of urlsSeen) expect(url).not.toContain(adminKey);
    expect(await page.evaluate(() => JSON.stringify(localStorage))).toBe('{}');
    for (const line of t.logs) expect(line).not.toContain(adminKey);
    expect(page.url()).toBe(`${t.baseUrl}/#console`);
  });
});
