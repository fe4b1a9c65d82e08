/**
 * The conversation of a GA transcription session, as OpenAI Realtime GA clients see it: each committed
 * audio buffer is a user `message` item, announced with `conversation.item.added` and `conversation.item.done`
 * right after `input_audio_buffer.committed` (transcript still null, as OpenAI sends them), and readable
 * with `conversation.item.retrieve` → `conversation.item.retrieved` once its transcript is known. The OpenAI
 * Agents SDK builds its `history` from these events, and retrieves every item after its transcript.
 *
 * Kept per session: each item's id and transcript, the last MAX_KEPT_ITEMS items only (a session can run
 * for hours; an item older than that is "not found"). The audio is not kept, so a retrieved item carries
 * no `audio`.
 */
import type { SessionOutput } from '../../realtime/session-events.js';
import type { ServerEvent } from './server-events.js';

export const MAX_KEPT_ITEMS = 256;

interface KeptItem {
  /** null until the item's transcription completed (or for good, when it failed). */
  transcript: string | null;
}

export class ConversationItems {
  private readonly items = new Map<string, KeptItem>();

  constructor(private readonly maxKept = MAX_KEPT_ITEMS) {}

  /**
   * The conversation events one session output adds (after the output's own events). `transcript` is the
   * text the session delivered as the item's transcript (its translation in a translating session).
   */
  eventsFor(output: SessionOutput, transcript?: string): ServerEvent[] {
    if (output.type === 'committed') {
      this.items.set(output.itemId, { transcript: null });
      // Oldest first in a Map's order: forget the oldest past the bound.
      if (this.items.size > this.maxKept) this.items.delete(this.items.keys().next().value!);
      const item = userAudioItem(output.itemId, null);
      return [
        { type: 'conversation.item.added', previous_item_id: output.previousItemId, item },
        { type: 'conversation.item.done', previous_item_id: output.previousItemId, item },
      ];
    }
    if (output.type === 'completed') {
      const kept = this.items.get(output.itemId);
      if (kept) kept.transcript = transcript ?? output.transcript;
    }
    return [];
  }

  /** The answer to conversation.item.retrieve: the item, or the error OpenAI sends for an id it does not hold. */
  retrieve(itemId: string): { found: true; event: ServerEvent } | { found: false; code: string; message: string; param: string } {
    const kept = this.items.get(itemId);
    if (!kept) {
      return {
        found: false,
        code: 'item_retrieve_invalid_item_id',
        message: `Error retrieving item: the item with id ${JSON.stringify(itemId.slice(0, 80))} does not exist.`,
        param: 'item_id',
      };
    }
    return { found: true, event: { type: 'conversation.item.retrieved', item: userAudioItem(itemId, kept.transcript) } };
  }
}

function userAudioItem(id: string, transcript: string | null): object {
  return { id, object: 'realtime.item', type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_audio', transcript }] };
}
