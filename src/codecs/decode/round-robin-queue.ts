/**
 * A wait queue served round-robin across keys (accounts): FIFO within a key, one item per key in turn —
 * and nothing more: no priority classes, no tags (the model replicas' queue, engines/runtime/fair-queue.ts,
 * adds those).
 * So an account that queues 48 uploads makes another account's one upload wait behind at most one of
 * them per free place, not behind all 48 (issue 16's fairness rule, for the decoder pool's queue).
 *
 * The rotation is the Map's insertion order: taking an item moves its key to the back if it still has
 * items, and a key that arrives with nothing queued joins at the back.
 */
export class RoundRobinQueue<T> {
  private readonly lanes = new Map<string, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    const lane = this.lanes.get(key);
    if (lane) lane.push(item);
    else this.lanes.set(key, [item]);
    this.count++;
  }

  /** The next item in turn: the head of the first key's lane; that key goes to the back of the rotation. */
  shift(): T | undefined {
    const first = this.lanes.entries().next();
    if (first.done) return undefined;
    const [key, lane] = first.value;
    const item = lane.shift()!;
    this.lanes.delete(key);
    if (lane.length) this.lanes.set(key, lane);
    this.count--;
    return item;
  }

  /** Takes `item` out wherever it waits (an aborted request); returns whether it was there. */
  remove(item: T): boolean {
    for (const [key, lane] of this.lanes) {
      const index = lane.indexOf(item);
      if (index < 0) continue;
      lane.splice(index, 1);
      if (!lane.length) this.lanes.delete(key);
      this.count--;
      return true;
    }
    return false;
  }

  /** Empties the queue, returning every item (lane by lane). */
  drain(): T[] {
    const all = [...this.lanes.values()].flat();
    this.lanes.clear();
    this.count = 0;
    return all;
  }
}
