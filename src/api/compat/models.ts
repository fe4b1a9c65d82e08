/** GET /models and GET /models/{model} (SPEC §4.1, §4.2): aliases answer with the canonical id. */
import { ApiError } from '../errors.js';
import type { ModelCatalog } from '../model-catalog.js';
import { ModelListSchema, ModelObjectSchema } from '../schemas/common.js';
import type { RouteDef } from '../types.js';
import { jsonContent } from '../schemas/responses.js';

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
        const id = req.params.model ?? '';
        const model = catalog.resolve(id);
        if (!model) throw new ApiError('model_not_found', `The model \`${id}\` does not exist.`, { param: 'model' });
        return { kind: 'json', body: catalog.toObject(model) };
      },
    },
  ];
}
