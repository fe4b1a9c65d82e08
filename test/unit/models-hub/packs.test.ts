/**
 * The offline pieces of `models:pull --pack`: the bambara pack's pins are well formed and say which
 * checksums no hub page gave; variants pick the right file names and runner options; a hub listing that
 * disagrees with a pin is refused before downloading; a pack's manifest starts as a copy of the base with
 * every model folder rebased; and the licence lines say "not for commercial use" for CC BY-NC weights.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadManifest } from '../../../src/engines/manifest.js';
import { BAMBARA_PINS, bambaraPack, DEFAULT_NLLB_VARIANT } from '../../../src/models-hub/bambara-pack.js';
import { HubError } from '../../../src/models-hub/hub-errors.js';
import type { RepoListing } from '../../../src/models-hub/hub-client.js';
import { copyManifest } from '../../../src/models-hub/manifest-writer.js';
import { checkPack, PackError, resolvePack, unpinnedChecksums } from '../../../src/models-hub/pack.js';
import { licenceLines } from '../../../src/models-hub/pull-pack.js';
import { pinFiles } from '../../../src/models-hub/pull.js';

let tmp = '';
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-packs-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('the bambara pack', () => {
  const pack = bambaraPack();

  it('pins full commits and sha256 values, serves banjugu-1 and jifili-1, both non-commercial', () => {
    expect(() => checkPack(pack)).not.toThrow();
    expect(pack.models.map((m) => [m.id, m.engine, m.repo, m.revision])).toEqual([
      ['banjugu-1', 'nllb', 'Xenova/nllb-200-distilled-600M', 'bfaad393bfa9f83f73fb0ddaeb21f42d3323e821'],
      ['jifili-1', 'vits-sherpa', 'willwade/mms-tts-multilingual-models-onnx', '13274c6f88bdb6c2d5dacfed08d607d4161dde71'],
    ]);
    for (const model of pack.models)
      expect(model.license).toMatchObject({ id: 'cc-by-nc-4.0', commercialUse: false, notice: expect.stringMatching(/^NON-COMMERCIAL USE ONLY\./) });
  });

  it('says which checksums it leaves to the hub listing of the pinned commit (no hub page gave them)', () => {
    expect(unpinnedChecksums(resolvePack(pack))).toEqual([
      'Xenova/nllb-200-distilled-600M/config.json',
      'Xenova/nllb-200-distilled-600M/generation_config.json',
      'Xenova/nllb-200-distilled-600M/tokenizer.json',
      'Xenova/nllb-200-distilled-600M/tokenizer_config.json',
      'willwade/mms-tts-multilingual-models-onnx/bam/model.onnx',
      'willwade/mms-tts-multilingual-models-onnx/bam/tokens.txt',
    ]);
    expect(unpinnedChecksums(resolvePack(pack, 'quantized'))).toContain('Xenova/nllb-200-distilled-600M/onnx/decoder_model_merged_quantized.onnx');
  });

  it('picks the NLLB file names and runner option of each variant; the default is fp32 (provisional)', () => {
    const nllb = (variant?: string) => resolvePack(pack, variant)[0]!;
    expect(DEFAULT_NLLB_VARIANT).toBe('fp32');
    expect(nllb()).toMatchObject({ variant: 'fp32', options: {} });
    expect(
      nllb()
        .files.map((f) => f.path)
        .slice(-2),
    ).toEqual(['onnx/encoder_model.onnx', 'onnx/decoder_model_merged.onnx']);
    expect(nllb('quantized')).toMatchObject({ variant: 'quantized', options: { variant: '_quantized' } });
    expect(
      nllb('quantized')
        .files.map((f) => f.path)
        .slice(-2),
    ).toEqual(['onnx/encoder_model_quantized.onnx', 'onnx/decoder_model_merged_quantized.onnx']);
    expect(nllb('fp16').options).toEqual({ variant: '_fp16' });
    expect(resolvePack(pack, 'quantized')[1]).toMatchObject({ variant: null, files: [{ path: 'bam/model.onnx' }, { path: 'bam/tokens.txt' }] });
    expect(() => resolvePack(pack, 'int4')).toThrow(new PackError('Unknown --variant int4 for banjugu-1; one of fp32, quantized, fp16'));
  });

  it('refuses malformed pins', () => {
    const pins = structuredClone(BAMBARA_PINS);
    pins.speech.revision = 'main';
    expect(() => checkPack(bambaraPack(pins))).toThrow(/jifili-1: revision "main" is not a full commit sha/);
    const bad = structuredClone(BAMBARA_PINS);
    bad.translation.files['onnx/encoder_model.onnx']!.sha256 = 'D3D9';
    expect(() => checkPack(bambaraPack(bad))).toThrow(/onnx\/encoder_model\.onnx: "D3D9" is not a sha256/);
  });

  it('shows each licence with its source, in plain words', () => {
    const lines = licenceLines(resolvePack(pack)[1]!);
    expect(lines[0]).toBe('jifili-1 ← willwade/mms-tts-multilingual-models-onnx@13274c6f88bd (folder bam) (114 MB)');
    expect(lines[1]).toBe(
      '  Licence: Creative Commons Attribution-NonCommercial 4.0 International (CC BY-NC 4.0) [cc-by-nc-4.0] https://creativecommons.org/licenses/by-nc/4.0/',
    );
    expect(lines[2]).toMatch(/^ {2}NOT FOR COMMERCIAL USE\. NON-COMMERCIAL USE ONLY\. MMS-TTS is licensed CC BY-NC 4\.0 by Meta AI/);
  });
});

describe('pins against the hub listing', () => {
  const sha = (c: string) => c.repeat(64);
  const listing: RepoListing = {
    repo: 'o/r',
    revision: 'c'.repeat(40),
    commit: 'c'.repeat(40),
    files: [
      { path: 'model.onnx', size: 1000, sha256: sha('a') },
      { path: 'tokens.txt', size: 12, gitOid: 'b'.repeat(40) },
    ],
  };

  it('carries the pinned sha256 (what the download is checked against) and keeps the listing where nothing is pinned', () => {
    expect(
      pinFiles(listing, [
        { path: 'model.onnx', sha256: sha('a'), size: 1000 },
        { path: 'tokens.txt', sha256: null, size: 12 },
      ]),
    ).toEqual([
      { path: 'model.onnx', size: 1000, sha256: sha('a') },
      { path: 'tokens.txt', size: 12, gitOid: 'b'.repeat(40) },
    ]);
    // A small (git) file has no listed sha256: the pinned one is added, and both are checked.
    expect(pinFiles(listing, [{ path: 'tokens.txt', sha256: sha('e'), size: null }])).toEqual([
      { path: 'tokens.txt', size: 12, gitOid: 'b'.repeat(40), sha256: sha('e') },
    ]);
  });

  it.each([
    [
      { path: 'model.onnx', sha256: sha('f'), size: null },
      `The hub lists model.onnx of o/r@${'c'.repeat(40)} with sha256 ${sha('a')}, the pack pins ${sha('f')}`,
    ],
    [{ path: 'model.onnx', sha256: null, size: 999 }, `The hub lists model.onnx of o/r@${'c'.repeat(40)} with 1000 bytes, the pack pins 999`],
    [{ path: 'onnx/model.onnx', sha256: null, size: null }, `o/r@${'c'.repeat(40)} has no onnx/model.onnx, which the pack pins; nothing was downloaded`],
  ])('refuses %o', (pin, message) => {
    const err = (() => {
      try {
        pinFiles(listing, [pin]);
      } catch (e) {
        return e as HubError;
      }
    })();
    expect(err).toBeInstanceOf(HubError);
    expect(err!.message).toContain(message);
  });
});

describe("a pack's manifest", () => {
  it('starts as a copy of the base with relative folders rebased and absolute ones kept, and loads', () => {
    fs.mkdirSync(path.join(tmp, 'models', 'demo', 'asr'), { recursive: true });
    const base = path.join(tmp, 'models', 'kuma-models.json');
    fs.writeFileSync(
      base,
      JSON.stringify({
        models: [
          { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: 'demo/asr', maxQueue: 8 },
          { id: 'vad', engine: 'silero-vad', dir: '.' },
          { id: 'x', engine: 'nllb', dir: tmp },
        ],
      }),
    );
    const target = path.join(tmp, 'models', 'bambara', 'kuma-models.json');
    copyManifest(base, target, 'from the base');
    const written = JSON.parse(fs.readFileSync(target, 'utf8'));
    expect(written).toEqual({
      comment: 'from the base',
      models: [
        { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: '../demo/asr', maxQueue: 8 },
        { id: 'vad', engine: 'silero-vad', dir: '..' },
        { id: 'x', engine: 'nllb', dir: tmp },
      ],
    });
    expect(loadManifest(target).entries.map((e) => e.absoluteDir)).toEqual([path.join(tmp, 'models', 'demo', 'asr'), path.join(tmp, 'models'), tmp]);
  });
});
