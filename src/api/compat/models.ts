/** GET /models and GET /models/{model} (SPEC §4.1, §4.2): aliases answer with the canonical id. */
import type { ModelCatalog } from '../model-catalog.js';
import { ModelListSchema, ModelObjectSchema } from '../schemas/common.js';
import type { RouteDef } from '../types.js';
import { jsonContent } from '../schemas/responses.js';
import { resolveModel } from './model-resolution.js';

export function modelRoutes(catalog: ModelCatalog): RouteDef[] {
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
        body: { object: 'list', data: catalog.list().map((m) => catalog.toObject(m)) },
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
        const model = resolveModel(catalog, req.params.model ?? '', 'any', req.responseHeaders);
        return { kind: 'json', body: catalog.toObject(model) };
      },
    },
  ];
}
