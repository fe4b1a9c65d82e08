/**
 * The native surface's route definitions (SPEC §4.7), served under '' and '/api' with x-api-key only, on
 * the primary surface's engines, pipeline, ledger and prices. The retirement calendar is applied to them
 * in native-surface.ts.
 */
import type { CompatDeps } from '../compat/deps.js';
import type { RouteDef } from '../types.js';
import { nativeSpeechRoutes } from './speech-routes.js';
import { nativeTranscribeRoutes } from './transcribe-routes.js';
import { nativeTranslateRoutes } from './translate-routes.js';

export function nativeRoutes(deps: CompatDeps): RouteDef[] {
  return [...nativeTranslateRoutes(deps), ...nativeTranscribeRoutes(deps), ...nativeSpeechRoutes(deps)];
}
