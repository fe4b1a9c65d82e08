/** ConversationItems: the items a session keeps for conversation.item.retrieve are the last MAX_KEPT_ITEMS committed, with their transcripts. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { ConversationItems } from '../../../../src/api/realtime/conversation-items.js';

it('keeps exactly the last `maxKept` items committed, each with its own transcript (or null until completed)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.boolean(), { maxLength: 30 }), (maxKept, completes) => {
      const items = new ConversationItems(maxKept);
      let previous: string | null = null;
      completes.forEach((complete, i) => {
        const itemId = `item_${i}`;
        const events = items.eventsFor({ type: 'committed', itemId, previousItemId: previous });
        expect(events.map((e) => e.type)).toEqual(['conversation.item.added', 'conversation.item.done']);
        expect(events[0]).toMatchObject({ previous_item_id: previous, item: { id: itemId, content: [{ type: 'input_audio', transcript: null }] } });
        previous = itemId;
        if (complete) expect(items.eventsFor({ type: 'completed', itemId, transcript: `text ${i}`, seconds: 1 })).toEqual([]);
      });
      completes.forEach((complete, i) => {
        const answer = items.retrieve(`item_${i}`);
        const kept = i >= completes.length - maxKept;
        expect(answer.found).toBe(kept);
        if (answer.found)
          expect(answer.event).toMatchObject({
            type: 'conversation.item.retrieved',
            item: { id: `item_${i}`, content: [{ transcript: complete ? `text ${i}` : null }] },
          });
        else expect(answer.code).toBe('item_retrieve_invalid_item_id');
      });
    }),
  );
});

it('a translating session keeps the transcript it delivered (the translation)', () => {
  const items = new ConversationItems();
  items.eventsFor({ type: 'committed', itemId: 'a', previousItemId: null });
  items.eventsFor(
    { type: 'completed', itemId: 'a', transcript: 'i ni ce', seconds: 1, translation: { language: 'fra_Latn', text: 'bonjour', characters: 7 } },
    'bonjour',
  );
  const answer = items.retrieve('a');
  expect(answer.found && answer.event).toMatchObject({ item: { content: [{ transcript: 'bonjour' }] } });
});
