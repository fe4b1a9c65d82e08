/**
 * All model engines of a server, built from the manifest: started together in the background (the
 * server listens at once; /readyz says not-ready until every model is loaded and warmed), looked up by
 * served id or alias, closed together.
 */
import type { Logger } from 'pino';
import { loadManifest, type ModelEntry } from './manifest.js';
import { ModelEngine, type EngineThreads } from './runtime/model-engine.js';

export interface EngineReadiness {
  name: string;
  ready: boolean;
  detail?: string;
}

export class EngineRegistry {
  private readonly byId = new Map<string, ModelEngine>();
  private readonly engines: ModelEngine[] = [];
  private failure: Error | null = null;
  private startPromise: Promise<void> | null = null;

  constructor(engines: ModelEngine[]) {
    for (const engine of engines) {
      this.engines.push(engine);
      for (const id of [engine.entry.id, ...engine.entry.aliases]) this.byId.set(id, engine);
    }
  }

  /** The manifest's models, those `keep` accepts (default: all); an entry left out is never loaded. */
  static fromManifest(file: string, vendor: string, threads: EngineThreads, keep: (entry: ModelEntry) => boolean = () => true): EngineRegistry {
    const manifest = loadManifest(file, vendor);
    return new EngineRegistry(manifest.entries.filter(keep).map((entry) => new ModelEngine(entry, threads)));
  }

  /** Starts every engine; resolves when all are ready, rejects with the first load failure. */
  start(logger?: Logger): Promise<void> {
    this.startPromise ??= Promise.all(
      this.engines.map(async (engine) => {
        const t0 = Date.now();
        await engine.start();
        // The vocabulary (CTC pieces) is part of the info the realtime side reads, not of the log line.
        const { pieces: _pieces, ...info } = engine.info;
        logger?.info({ model: engine.entry.id, engine: engine.entry.engine, ms: Date.now() - t0, info }, 'model ready');
      }),
    ).then(
      () => undefined,
      (err: Error) => {
        this.failure = err;
        throw err;
      },
    );
    return this.startPromise;
  }

  get(id: string): ModelEngine | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  readiness(): EngineReadiness {
    if (this.failure) return { name: 'models', ready: false, detail: this.failure.message };
    const loading = this.engines.filter((e) => !e.ready).map((e) => e.entry.id);
    return loading.length ? { name: 'models', ready: false, detail: `loading: ${loading.join(', ')}` } : { name: 'models', ready: true };
  }

  /**
   * One served id's state (the admin API's model list): ready once its engine is loaded and warm; while it
   * loads, or after a load failure (which stops the start of every engine), not ready with the reason.
   * Undefined when no engine here serves the id.
   */
  modelReadiness(id: string): EngineReadiness | undefined {
    const engine = this.byId.get(id);
    if (!engine) return undefined;
    if (engine.ready) return { name: id, ready: true };
    return { name: id, ready: false, detail: this.failure ? `failed to load: ${this.failure.message}` : 'loading' };
  }

  async close(): Promise<void> {
    await Promise.all(this.engines.map((e) => e.close()));
  }
}
