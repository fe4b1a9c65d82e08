/**
 * Studio first paint (`npm run bench:studio`): how soon a browser paints Kuma Studio's page at `/`, served
 * by the real server (startKuma, in process, no models), against a baseline in the same run: a minimal
 * HTML page (one heading, no script, no stylesheet) served by node:http. Each load is a cold one — a new
 * incognito context, so no cache — in one headless Chromium; loads alternate studio, baseline, … so drift
 * hits both. The figure is first-contentful-paint from the page's own Paint Timing entries (ms after
 * navigation start); the target is ≤ 200 ms (issue P10). Appends to load-tests/RESULTS.md unless --no-write.
 *
 * Flags: --loads N (20 per page)  --no-write
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import puppeteer, { type Browser } from 'puppeteer-core';
import { loadConfig } from '../../src/config/config.js';
import { startKuma } from '../../src/server.js';
import { percentile, recordSection } from '../results.js';

const TARGET_MS = 200;
const CHROMIUM = process.env.KUMA_CHROMIUM ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => fs.existsSync(p));

const { values: flags } = parseArgs({ options: { loads: { type: 'string', default: '20' }, 'no-write': { type: 'boolean', default: false } } });
const loads = Number(flags.loads);
if (!Number.isInteger(loads) || loads < 1) throw new Error('--loads must be a positive integer');
if (!CHROMIUM) throw new Error('No Chromium found: install chromium or set KUMA_CHROMIUM');

const BASELINE_PAGE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body><h1>Baseline</h1></body></html>';

async function firstContentfulPaint(browser: Browser, url: string): Promise<number> {
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load' });
    return await page.evaluate(
      () =>
        new Promise<number>((resolve) =>
          new PerformanceObserver((list) => {
            const entry = list.getEntriesByName('first-contentful-paint')[0];
            if (entry) resolve(entry.startTime);
          }).observe({ type: 'paint', buffered: true }),
        ),
    );
  } finally {
    await context.close();
  }
}

const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-bench-studio-'));
const config = loadConfig({}, { host: '127.0.0.1', port: 0, dbPath: ':memory:', tmpDir, logLevel: 'warn', modelsManifest: '', studio: true });
const kuma = await startKuma({ config });
const baseline = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(BASELINE_PAGE));
await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
const baselineUrl = `http://127.0.0.1:${(baseline.address() as { port: number }).port}/`;
const studioUrl = `http://127.0.0.1:${kuma.port}/`;

const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
const samples = { studio: [] as number[], baseline: [] as number[] };
try {
  // One warm-up load of each: the browser's own first-use costs (process spawn, fonts) are not the page's.
  await firstContentfulPaint(browser, studioUrl);
  await firstContentfulPaint(browser, baselineUrl);
  for (let i = 0; i < loads; i++) {
    samples.studio.push(await firstContentfulPaint(browser, studioUrl));
    samples.baseline.push(await firstContentfulPaint(browser, baselineUrl));
  }
} finally {
  await browser.close();
  await kuma.close();
  baseline.close();
  fs.rmSync(tmpDir, { recursive: true, force: true });
}

const stats = (values: number[]) => ({ p50: percentile(values, 50), p95: percentile(values, 95), max: Math.max(...values) });
const studio = stats(samples.studio);
const base = stats(samples.baseline);
const fmt = (n: number) => n.toFixed(1);
const table = [
  '| page | FCP p50 (ms) | p95 | max |',
  '|---|---|---|---|',
  `| Kuma Studio \`/\` (cold, no cache) | ${fmt(studio.p50)} | ${fmt(studio.p95)} | ${fmt(studio.max)} |`,
  `| baseline: minimal HTML, node:http | ${fmt(base.p50)} | ${fmt(base.p95)} | ${fmt(base.max)} |`,
  `| ratio studio / baseline | ${(studio.p50 / base.p50).toFixed(2)}× | ${(studio.p95 / base.p95).toFixed(2)}× | |`,
];
const verdict = studio.p95 <= TARGET_MS ? `met: p95 ${fmt(studio.p95)} ms ≤ ${TARGET_MS} ms` : `NOT met: p95 ${fmt(studio.p95)} ms > ${TARGET_MS} ms`;
recordSection(
  'bench:studio — first contentful paint of Kuma Studio',
  [
    `Chromium: ${CHROMIUM} (headless), ${loads} cold loads per page in fresh incognito contexts, alternating, after one warm-up each`,
    `Target (issue P10): first paint ≤ ${TARGET_MS} ms — ${verdict}`,
  ],
  table,
  !flags['no-write'],
);
