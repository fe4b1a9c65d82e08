/**
 * No user-facing text cites documents users do not have ("SPEC §9", "issue P10", "PROTOCOLS §6"): the README,
 * every string a source file can send or print (the string and template literals of src/, not its comments, which
 * are for the developers who have those documents), and the Studio's page and stylesheet.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const CITATION = /\b(?:SPEC|PROTOCOLS|DESIGN|MODELS)(?:\.md)? ?§|\bissue P\d+/;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(file);
    else if (/\.(ts|html|css)$/.test(entry.name)) yield file;
  }
}

/** The text of every string and template literal of a TypeScript file, with its line. */
function literals(file: string): Array<{ line: number; text: string }> {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Array<{ line: number; text: string }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('user-facing text cites no internal document', () => {
  it('finds a citation where there is one (the scanner works)', () => {
    for (const text of ['(SPEC §9)', 'see issue P11', 'PROTOCOLS §6', 'MODELS.md §2']) expect(CITATION.test(text)).toBe(true);
    for (const text of ['the spec', 'P10 latency', '§ sign', 'issue tracker']) expect(CITATION.test(text)).toBe(false);
  });

  it('the README', () => {
    const lines = fs.readFileSync('README.md', 'utf8').split('\n');
    expect(lines.map((text, index) => ({ line: index + 1, text })).filter(({ text }) => CITATION.test(text))).toEqual([]);
  });

  it("src/: every string literal (messages, errors, OpenAPI descriptions, logs), and the Studio's page", () => {
    const cited: string[] = [];
    for (const file of sourceFiles('src')) {
      if (file.endsWith('.ts')) {
        for (const { line, text } of literals(file)) if (CITATION.test(text)) cited.push(`${file}:${line}: ${text.slice(0, 120)}`);
      } else if (CITATION.test(fs.readFileSync(file, 'utf8'))) cited.push(file);
    }
    expect(cited).toEqual([]);
  });
});
