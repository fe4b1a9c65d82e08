/** Runs once before the test files: makes sure the demo model pack exists and is current. */
import { ensureDemoPack } from '../models/generator/generate-demo-pack.js';

export default async function setup(): Promise<void> {
  await ensureDemoPack();
}
