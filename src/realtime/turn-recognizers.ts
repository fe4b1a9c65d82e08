/**
 * Which recogniser a turn gets: a CTC model encodes the turn while it is spoken (chunked-turn.ts: chunks with
 * context, or its conv state carried), any other (Whisper) decodes the turn whole for its interims and final.
 */
import { ChunkedTurn, ctcGeometry } from './chunked-turn.js';
import type { SpeechModel } from './session-config.js';
import type { RealtimeSessionDeps } from './session-deps.js';
import { TurnTranscriber, type TurnRecognizer } from './turn-transcriber.js';

export function turnRecognizer(model: SpeechModel, deps: RealtimeSessionDeps, signal: AbortSignal, onDelta: (delta: string) => void): TurnRecognizer {
  const account = deps.charge.accountId;
  const geometry = ctcGeometry(model);
  if (geometry) return new ChunkedTurn(model, geometry, account, signal, onDelta, deps.interimAllowed, deps.observer);
  return new TurnTranscriber(model, account, signal, onDelta, deps.interimAllowed);
}
