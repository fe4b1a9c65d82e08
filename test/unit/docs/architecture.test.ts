/**
 * The contributor docs match the code: docs/ARCHITECTURE.md's floor table is the floors the import check
 * enforces (.dependency-cruiser.cjs), room for room and in order; its close-code table names every code and
 * reason of the registry (src/duplex/close-codes.ts); and the README's Layout lists exactly the folders and
 * top-level files of src/.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ABNORMAL_CLOSURE, CLOSE_CODES, CLOSE_REASONS } from '../../../src/duplex/close-codes.js';

const require = createRequire(import.meta.url);
const { floors } = require('../../../.dependency-cruiser.cjs') as { floors: Array<{ name: string; rooms: string[] }> };
const architecture = fs.readFileSync('docs/ARCHITECTURE.md', 'utf8');

/** The rows of the first table after `heading`, as cells. */
function tableAfter(markdown: string, heading: string): string[][] {
  const section = markdown.slice(markdown.indexOf(heading));
  const rows = section.split('\n').filter((line) => line.startsWith('|'));
  const first = section.split('\n').findIndex((line) => line.startsWith('|'));
  const contiguous = section
    .split('\n')
    .slice(first)
    .findIndex((line) => !line.startsWith('|'));
  return rows.slice(2, contiguous === -1 ? undefined : contiguous).map((row) =>
    row
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

describe('docs/ARCHITECTURE.md', () => {
  it('names the floors of the import check, lowest first, with the same rooms', () => {
    const table = tableAfter(architecture, '## Floors');
    expect(table.map(([floor, rooms]) => ({ name: ticked(floor!)[0], rooms: ticked(rooms!) }))).toEqual(floors.map(({ name, rooms }) => ({ name, rooms })));
  });

  it('has a row for every close code of the registry and names every reason', () => {
    const table = tableAfter(architecture, '## Close codes');
    expect(table.map(([code, name]) => [Number(code), ticked(name!)[0]])).toEqual(Object.entries(CLOSE_CODES).map(([name, code]) => [code, name]));
    const reasons = table.flatMap((row) => ticked(row[3]!));
    for (const reason of Object.values(CLOSE_REASONS)) expect(reasons).toContain(reason);
    expect(architecture).toContain(`${ABNORMAL_CLOSURE} (\`ABNORMAL_CLOSURE\`)`);
  });
});

describe('WebSocket closes in src/', () => {
  /** Every .ts file under `dir`. */
  const sources = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((entry) => (entry.isDirectory() ? sources(`${dir}/${entry.name}`) : entry.name.endsWith('.ts') ? [`${dir}/${entry.name}`] : []));

  it('name their code from the registry: no literal close code is passed to a close', () => {
    // A close, a refusal or an error message given a four-digit literal where a CLOSE_CODES name belongs.
    const literal = /\b(?:close|closeWith|CallRefused|errorMessage|sendError)\((?:[^()]*?,\s*)?1\d{3}\s*[,)]|\bcode: 1\d{3}\b/;
    const offenders = sources('src')
      .filter((file) => file !== 'src/duplex/close-codes.ts')
      .flatMap((file) =>
        fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ where: `${file}:${i + 1}`, line: line.trim() }))
          .filter(({ line }) => !line.startsWith('*') && !line.startsWith('//') && literal.test(line)),
      );
    expect(offenders).toEqual([]);
  });
});

describe("the README's Layout", () => {
  it('lists exactly the folders and top-level files of src/', () => {
    const readme = fs.readFileSync('README.md', 'utf8');
    const section = readme.slice(readme.indexOf('## Layout'));
    const block = section.slice(section.indexOf('```'), section.indexOf('```', section.indexOf('```') + 3));
    const listed = new Set([...block.matchAll(/^src\/([^/\s]+)/gm)].map((m) => m[1]!));
    const present = new Set(fs.readdirSync('src', { withFileTypes: true }).map((entry) => entry.name));
    expect([...listed].sort()).toEqual([...present].sort());
  });
});
