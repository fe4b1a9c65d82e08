/** What the primary surface's handlers need from the server. */
import type { DecoderPool } from '../../codecs/decode/decoder-pool.js';
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { Ledger } from '../../billing/ledger.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { ModelCatalog } from '../model-catalog.js';

export interface CompatDeps {
  catalog: ModelCatalog;
  ledger: Ledger;
  engines: EngineRegistry | null;
  decoder: DecoderPool;
  /** Where speech is encoded (the server's pools). */
  encoders: EncoderSource;
  maxAudioSeconds: number;
  /** Name of the extension object in request bodies (`djelia`). */
  vendor: string;
  logger: Logger;
  metrics: Metrics;
}
