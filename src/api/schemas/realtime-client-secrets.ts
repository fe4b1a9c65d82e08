/**
 * Request and response shapes of the realtime client-secret routes: GA `POST /realtime/client_secrets` and
 * beta `POST /realtime/transcription_sessions` (field names as in the OpenAI API reference). The session
 * configuration itself is validated by the realtime session when it starts; here it is kept as given.
 */
import { z } from 'zod';

/** OpenAI accepts 10–7200 s; Kuma caps client secrets at ten minutes. */
const ttlSeconds = z.number().int().min(10).max(600);
const expiry = z.object({ anchor: z.literal('created_at').optional(), seconds: ttlSeconds.optional() });

const SessionConfigSchema = z.looseObject({ type: z.string().optional() }).meta({
  id: 'RealtimeSessionConfig',
  description: 'The realtime session configuration (GA `session` shape), kept as given and applied when the session starts.',
});

export const ClientSecretRequestSchema = z
  .object({ expires_after: expiry.optional(), session: SessionConfigSchema.optional() })
  .meta({ id: 'RealtimeClientSecretRequest' });

export const ClientSecretResponseSchema = z
  .object({
    value: z.string().describe('The client secret (ek_…): present it in place of an API key when opening the realtime WebSocket. Single use.'),
    expires_at: z.number().int().describe('Seconds since the epoch.'),
    session: z.looseObject({ id: z.string(), object: z.string(), type: z.string(), expires_at: z.number().int() }),
  })
  .meta({ id: 'RealtimeClientSecret' });

export const TranscriptionSessionRequestSchema = z
  .looseObject({ client_secret: z.object({ expires_at: expiry.optional() }).optional() })
  .meta({ id: 'RealtimeTranscriptionSessionRequest', description: 'The beta transcription session configuration, kept as given.' });

export const TranscriptionSessionResponseSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('realtime.transcription_session'),
    client_secret: z.object({ value: z.string(), expires_at: z.number().int() }),
  })
  .meta({ id: 'RealtimeTranscriptionSession' });
