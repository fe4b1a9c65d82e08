/**
 * Engine type → runner factory. Imports are dynamic so a worker loads only the code (and native
 * sessions) of the one engine it hosts.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EngineType } from './manifest.js';
import type { Runner, RunnerFactory, RunnerLoadOptions } from './runner.js';

const FACTORIES: Record<EngineType, () => Promise<RunnerFactory>> = {
  'ctc-wav2vec2': async () => (await import('./asr/ctc-runner.js')).createCtcRunner,
  'ctc-nemo': async () => (await import('./asr/ctc-runner.js')).createCtcRunner,
  whisper: async () => (await import('./asr/whisper-runner.js')).createWhisperRunner,
  'vits-hf': async () => (await import('./tts/vits-runner.js')).createVitsRunner,
  'vits-sherpa': async () => (await import('./tts/vits-runner.js')).createVitsRunner,
  'vits-piper': async () => (await import('./tts/vits-runner.js')).createVitsRunner,
  nllb: async () => (await import('./mt/nllb-runner.js')).createNllbRunner,
  'silero-vad': async () => (await import('./vad/silero-runner.js')).createSileroRunner,
  custom: async () => {
    throw new Error('unreachable: custom runners are loaded by module path');
  },
};

export async function loadRunner(options: RunnerLoadOptions): Promise<Runner> {
  if (options.entry.engine === 'custom') {
    const module = options.entry.options.module;
    if (typeof module !== 'string') throw new Error(`Model ${options.entry.id}: the custom engine needs options.module`);
    const loaded = await import(pathToFileURL(path.resolve(options.dir, module)).href);
    if (typeof loaded.createRunner !== 'function') throw new Error(`Model ${options.entry.id}: ${module} does not export createRunner`);
    return (loaded.createRunner as RunnerFactory)(options);
  }
  const factory = await FACTORIES[options.entry.engine]();
  return factory(options);
}
