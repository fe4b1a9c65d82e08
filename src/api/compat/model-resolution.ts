/**
 * Turns a request's `model` into the served model and the engine that runs it: unknown and retired ids
 * are 404 model_not_found (param `model`), a model of the wrong capability is 400, and a model with no
 * engine configured on this server is 503.
 */
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { ModelEngine } from '../../engines/runtime/model-engine.js';
import { ApiError } from '../errors.js';
import type { Capability, CatalogModel, ModelCatalog } from '../model-catalog.js';
import { markLegacyModel, modelSuccessor } from '../deprecation.js';
import type { ApiRequest } from '../types.js';

const CAPABILITY_WORDS: Record<Capability, string> = {
  transcription: 'speech to text',
  speech: 'text to speech',
  translation: 'text translation',
};

/**
 * `req` (when given) gets the deprecation headers when the id is a legacy one; a legacy id past its retirement
 * answers 404 with a Link to its replacement. Both Links are under the primary prefix the request came in on.
 */
export function resolveModel(
  catalog: ModelCatalog,
  requested: string,
  capability: Capability | 'any',
  req?: Pick<ApiRequest, 'responseHeaders' | 'path'>,
): CatalogModel {
  const model = catalog.resolve(requested);
  if (!model) {
    const replacement = catalog.replacementOf(requested);
    if (replacement) {
      throw new ApiError('model_not_found', `The model \`${requested}\` was retired on ${catalog.retirementDate}; use \`${replacement}\`.`, {
        param: 'model',
        headers: { link: `<${modelSuccessor(replacement, req?.path)}>; rel="successor-version"` },
      });
    }
    throw new ApiError('model_not_found', `The model \`${requested}\` does not exist.`, { param: 'model' });
  }
  if (req) markLegacyModel(catalog, model, req);
  if (capability !== 'any' && model.capability !== capability) {
    throw new ApiError('invalid_value', `The model \`${requested}\` serves ${CAPABILITY_WORDS[model.capability]}, not ${CAPABILITY_WORDS[capability]}.`, {
      param: 'model',
    });
  }
  return model;
}

export function engineFor(engines: EngineRegistry | null, model: CatalogModel): ModelEngine {
  const engine = engines?.get(model.id);
  if (!engine) {
    throw new ApiError('service_unavailable', `The model \`${model.id}\` is not loaded on this server.`, { headers: { 'retry-after': '60' } });
  }
  return engine;
}
