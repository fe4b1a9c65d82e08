/**
 * The order in which jobs waiting for a model replica are served: by priority class first, then fairly
 * across accounts (start-time fair queueing with equal weights, i.e. round-robin between the accounts that
 * are waiting).
 *
 * Rules:
 *   - Classes: an `opening` job (the first job of a request: a transcription, a translation, the first
 *     phrase of a speech request) is served before a `continuation` (a later phrase of a speech request
 *     already under way). First audio is what a caller waits for; a continuation only has to keep ahead of
 *     playback.
 *   - Except across accounts: an opening that is served while a continuation of another account waits
 *     passes it, and after one pass the next turn goes to the continuations. Without this, an account
 *     that keeps starting requests (bench:fairness: 32 clients of account A) would hold back another
 *     account's continuations for as long as it floods — B's second phrase waited behind every one of A's
 *     first phrases. With it, openings and other accounts' continuations take turns; one account's own
 *     openings still all go before its own continuations (a burst of one account is unaffected).
 *   - Within a class, every waiting job gets a tag: max(the tag last served, its account's previous tag + 1),
 *     and the lowest tag is served next (ties: the earlier arrival). An account that was not waiting starts at
 *     the tag being served now, so it is served next, ahead of any backlog; accounts with backlogs alternate.
 *     So between an account's job arriving and its being served, every other account is served at most once
 *     (per class) — one account's flood delays another's first job by at most the jobs already running (one
 *     per replica place).
 *
 * Jobs of one account keep their arrival order within a class. Pure data structure: no timers, no I/O.
 */

export type JobPriority = 'opening' | 'continuation';

export interface QueueTicket {
  account: string;
  priority: JobPriority;
}

interface Entry<T> {
  item: T;
  tag: number;
  seq: number;
}

/** One class: per-account FIFO queues whose heads compete by tag. */
class FairClass<T> {
  private readonly byAccount = new Map<string, Entry<T>[]>();
  /** Next tag each account's next job would get (at least); pruned once the served tag has passed it. */
  private readonly nextTag = new Map<string, number>();
  private served = 0;
  size = 0;

  /** The account whose job shift() would serve next, if any. */
  nextAccount(): string | undefined {
    let best: { account: string; entry: Entry<T> } | undefined;
    for (const [account, queue] of this.byAccount) {
      const head = queue[0]!;
      if (!best || head.tag < best.entry.tag || (head.tag === best.entry.tag && head.seq < best.entry.seq)) best = { account, entry: head };
    }
    return best?.account;
  }

  push(account: string, item: T, seq: number): void {
    const tag = Math.max(this.served, this.nextTag.get(account) ?? 0);
    this.nextTag.set(account, tag + 1);
    const queue = this.byAccount.get(account);
    if (queue) queue.push({ item, tag, seq });
    else this.byAccount.set(account, [{ item, tag, seq }]);
    this.size++;
  }

  shift(): T | undefined {
    let best: { account: string; entry: Entry<T> } | undefined;
    for (const [account, queue] of this.byAccount) {
      const head = queue[0]!;
      if (!best || head.tag < best.entry.tag || (head.tag === best.entry.tag && head.seq < best.entry.seq)) best = { account, entry: head };
    }
    if (!best) return undefined;
    const queue = this.byAccount.get(best.account)!;
    queue.shift();
    if (!queue.length) this.byAccount.delete(best.account);
    this.size--;
    this.served = best.entry.tag;
    // Accounts that are not waiting and whose next tag is no longer ahead of the served one need no memory.
    for (const [account, tag] of this.nextTag) if (tag <= this.served && !this.byAccount.has(account)) this.nextTag.delete(account);
    return best.entry.item;
  }

  /** Whether a job of an account other than `account` waits in this class. */
  hasOtherThan(account: string): boolean {
    for (const key of this.byAccount.keys()) if (key !== account) return true;
    return false;
  }

  remove(item: T): boolean {
    for (const [account, queue] of this.byAccount) {
      const index = queue.findIndex((e) => e.item === item);
      if (index < 0) continue;
      queue.splice(index, 1);
      if (!queue.length) this.byAccount.delete(account);
      this.size--;
      return true;
    }
    return false;
  }

  drain(): T[] {
    const all = [...this.byAccount.values()].flat().sort((a, b) => a.seq - b.seq);
    this.byAccount.clear();
    this.size = 0;
    return all.map((e) => e.item);
  }
}

export class FairQueue<T> {
  private readonly opening = new FairClass<T>();
  private readonly continuation = new FairClass<T>();
  private seq = 0;

  /** Waiting jobs of both classes. */
  get length(): number {
    return this.opening.size + this.continuation.size;
  }

  /** Waiting opening jobs (the ones admission control counts). */
  get openings(): number {
    return this.opening.size;
  }

  push(item: T, ticket: QueueTicket): void {
    (ticket.priority === 'continuation' ? this.continuation : this.opening).push(ticket.account, item, this.seq++);
  }

  /** Whether the last job served was an opening that passed a waiting continuation of another account. */
  private continuationOwed = false;

  /** The next job to serve (see the header for the order), removed from the queue. */
  shift(): T | undefined {
    const account = this.opening.nextAccount();
    if (account === undefined || (this.continuationOwed && this.continuation.size > 0)) {
      this.continuationOwed = false;
      return this.continuation.shift();
    }
    this.continuationOwed = this.continuation.hasOtherThan(account);
    return this.opening.shift();
  }

  /** The next opening job, removed from the queue (continuations stay where they are). */
  shiftOpening(): T | undefined {
    return this.opening.size > 0 ? this.opening.shift() : undefined;
  }

  /** Removes a job that stopped waiting (its caller gave up); false when it was not queued. */
  remove(item: T): boolean {
    return this.opening.remove(item) || this.continuation.remove(item);
  }

  /** Empties the queue, returning every job: openings, then continuations, each in arrival order. */
  drain(): T[] {
    return [...this.opening.drain(), ...this.continuation.drain()];
  }
}
