/**
 * GET /models and GET /models/{model} (SPEC §4.1, §4.2): aliases answer with the canonical id. A model whose
 * manifest entry records a licence (one installed by `models:pull --pack`) carries it as the extension
 * field `license`, so a client can see, e.g., that a voice is for non-commercial use only.
 */
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { CatalogModel, ModelCatalog, ModelObject } from '../model-catalog.js';
import { ModelListSchema, ModelObjectSchema } from '../schemas/common.js';
import type { RouteDef } from '../types.js';
import { jsonContent } from '../schemas/responses.js';
import { resolveModel } from './model-resolution.js';

export interface ModelLicenseObject {
  id: string;
  name: string;
  url: string;
  commercial_use: boolean;
  source: string;
  notice: string;
}

/** The model object, with the licence of the weights that serve it when the manifest records one. */
function modelObject(catalog: ModelCatalog, engines: EngineRegistry | null, model: CatalogModel): ModelObject & { license?: ModelLicenseObject } {
  const license = engines?.get(model.id)?.entry.license;
  if (!license) return catalog.toObject(model);
  const { commercialUse, ...rest } = license;
  return {
    ...catalog.toObject(model),
    license: { id: rest.id, name: rest.name, url: rest.url, commercial_use: commercialUse, source: rest.source, notice: rest.notice },
  };
}

export function modelRoutes(catalog: ModelCatalog, engines: EngineRegistry | null = null): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/models',
      surface: 'compat',
      auth: true,
      openapi: {
        operationId: 'listModels',
        summary: 'List the models served',
        tags: ['Models'],
        responses: { 200: { description: 'The model list', content: [jsonContent(ModelListSchema)] } },
      },
      handler: async () => ({
        kind: 'json',
        body: { object: 'list', data: catalog.list().map((m) => modelObject(catalog, engines, m)) },
      }),
    },
    {
      method: 'GET',
      path: '/models/:model',
      surface: 'compat',
      auth: true,
      openapi: {
        operationId: 'retrieveModel',
        summary: 'Retrieve a model; an alias reports its canonical id',
        tags: ['Models'],
        responses: { 200: { description: 'The model', content: [jsonContent(ModelObjectSchema)] } },
        errors: [404],
      },
      handler: async (req) => {
        // A legacy id is served with its deprecation headers, and past retirement is a 404 naming its replacement.
        const model = resolveModel(catalog, req.params.model ?? '', 'any', req);
        return { kind: 'json', body: modelObject(catalog, engines, model) };
      },
    },
  ];
}
