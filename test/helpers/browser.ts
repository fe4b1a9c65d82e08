/**
 * Real Chromium for the Studio's browser tests (puppeteer-core drives the system browser: Debian's
 * `chromium`, or the one KUMA_CHROMIUM names). Where no browser is installed the tests are skipped with a
 * notice — unless KUMA_REQUIRE_BROWSER=1 (set by .ci/run, which installs Chromium), where its absence fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

export function findChromium(): string | undefined {
  const named = process.env.KUMA_CHROMIUM;
  if (named) return named;
  return CANDIDATES.find((candidate) => fs.existsSync(candidate));
}

export const browserRequired = process.env.KUMA_REQUIRE_BROWSER === '1';

/** Where a test's screenshots go: docs/studio when KUMA_UPDATE_SCREENSHOTS=1 (npm run studio:screenshots), else a temp folder. */
export function screenshotDir(): string {
  if (process.env.KUMA_UPDATE_SCREENSHOTS === '1') {
    const dir = path.resolve('docs/studio');
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }
  return fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-screens-'));
}

/**
 * Headless Chromium whose microphone is `fakeCaptureWav` (Chromium loops the file, in real time; a beep without it) and which
 * grants the microphone without asking. --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
 */
export async function launchChromium(fakeCaptureWav?: string): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error("No Chromium found: install Debian's chromium or set KUMA_CHROMIUM");
  return puppeteer.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      ...(fakeCaptureWav ? [`--use-file-for-fake-audio-capture=${fakeCaptureWav}`] : []),
      '--autoplay-policy=no-user-gesture-required',
      '--disable-dev-shm-usage',
    ],
  });
}
