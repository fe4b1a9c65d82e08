/**
 * The routes that mint realtime client secrets (src/auth/client-secrets.ts): GA `POST /realtime/client_secrets`
 * (default lifetime 600 s, as OpenAI's) and beta `POST /realtime/transcription_sessions` (60 s, as OpenAI's
 * beta tokens). Minting is free; the session configuration given here is what the realtime route starts with
 * when the secret is presented (`caller.clientSecret`).
 */
import { randomBytes } from 'node:crypto';
import { mintClientSecret } from '../../auth/client-secrets.js';
import type { Store } from '../../store/store.js';
import { jsonContent } from '../schemas/responses.js';
import {
  ClientSecretRequestSchema,
  ClientSecretResponseSchema,
  TranscriptionSessionRequestSchema,
  TranscriptionSessionResponseSchema,
} from '../schemas/realtime-client-secrets.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';

const GA_DEFAULT_TTL_S = 600;
const BETA_DEFAULT_TTL_S = 60;

const sessionId = () => `sess_${randomBytes(12).toString('hex')}`;

export function clientSecretRoutes(store: Pick<Store, 'createClientSecret'>): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/realtime/client_secrets',
      surface: 'compat',
      auth: true,
      openapi: {
        operationId: 'createRealtimeClientSecret',
        summary: 'Mint a short-lived client secret for a browser to open a realtime session',
        description: 'Single use, at most 600 s, accepted only by the realtime WebSocket route.',
        tags: ['Realtime'],
        request: { contentType: 'application/json', schema: ClientSecretRequestSchema },
        responses: { 200: { description: 'The client secret and the session it grants', content: [jsonContent(ClientSecretResponseSchema)] } },
      },
      handler: async (req, caller) => {
        const body = parseRequest(ClientSecretRequestSchema, await req.body.json());
        const session: Record<string, unknown> = { type: 'transcription', ...body.session };
        const minted = await mintClientSecret(store, caller!, { shape: 'ga', session, ttlSeconds: body.expires_after?.seconds ?? GA_DEFAULT_TTL_S });
        const object = session.type === 'transcription' ? 'realtime.transcription_session' : 'realtime.session';
        return {
          kind: 'json',
          body: { value: minted.value, expires_at: minted.expiresAt, session: { ...session, id: sessionId(), object, expires_at: minted.expiresAt } },
        };
      },
    },
    {
      method: 'POST',
      path: '/realtime/transcription_sessions',
      surface: 'compat',
      auth: true,
      openapi: {
        operationId: 'createRealtimeTranscriptionSession',
        summary: 'Mint a transcription session and its client secret (beta shape)',
        description:
          'The client secret is single use, lives 60 s unless `client_secret.expires_at.seconds` says otherwise (at most 600), and is accepted only by the realtime WebSocket route.',
        tags: ['Realtime'],
        request: { contentType: 'application/json', schema: TranscriptionSessionRequestSchema },
        responses: { 200: { description: 'The session with its client secret', content: [jsonContent(TranscriptionSessionResponseSchema)] } },
      },
      handler: async (req, caller) => {
        const { client_secret: secretOptions, ...session } = parseRequest(TranscriptionSessionRequestSchema, await req.body.json());
        const ttlSeconds = secretOptions?.expires_at?.seconds ?? BETA_DEFAULT_TTL_S;
        const minted = await mintClientSecret(store, caller!, { shape: 'beta', session, ttlSeconds });
        return {
          kind: 'json',
          body: { ...session, id: sessionId(), object: 'realtime.transcription_session', client_secret: { value: minted.value, expires_at: minted.expiresAt } },
        };
      },
    },
  ];
}
