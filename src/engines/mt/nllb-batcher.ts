/**
 * Batches the sentences of concurrent translation jobs into shared generations. At NLLB-600M size a decoder
 * step reads every decoder weight once whatever the batch (≈ 0.5 GB per step), so ten sentences decoded
 * together take little more than one alone (load-tests/real-size/nllb-batch-probe.ts), while ten jobs run
 * one after the other take ten times as long.
 *
 * The merged decoder export has no self-attention mask, so rows of one batch must be at the same step: a
 * sentence cannot join a generation under way. Sentences that arrive while one runs wait for the next
 * batch, which starts at once while fewer than `lanes` batches run (the lanes take turns step by step, so
 * a newcomer does not wait for a long generation to end). A batch takes the waiting sentences in arrival
 * order that share its target language and search settings, up to `maxSentences`.
 *
 * Each job gets its hypotheses as soon as its last sentence ends (a finished row leaves the batch, the rest
 * go on). A job whose caller goes away (its signal aborts) has its waiting sentences removed and its rows
 * dropped at the next step; the others in its batch are not disturbed.
 */
import { EngineCancelledError } from '../errors.js';
import type { RunnerContext } from '../runner.js';
import type { Hypothesis } from './nllb-search.js';

/** What a generation reports and asks, sentence by sentence (sentence = index in its batch). */
export interface BatchHooks {
  /** Rows of a cancelled sentence are dropped at the next step. */
  cancelled(sentence: number): boolean;
  /** A sentence has no live row left: its best hypothesis. */
  finished(sentence: number, best: Hypothesis): void;
  /** Between steps: lets cancel messages in. */
  checkpoint(): Promise<void>;
}

export type Generate = (sources: number[][], targetId: number, beams: number, maxLength: number, hooks: BatchHooks) => Promise<void>;

interface Job {
  key: string;
  targetId: number;
  beams: number;
  maxLength: number;
  results: Hypothesis[];
  left: number;
  settled: boolean;
  resolve: (results: Hypothesis[]) => void;
  reject: (err: unknown) => void;
}

interface Item {
  job: Job;
  index: number;
  ids: number[];
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class TranslationBatcher {
  private waiting: Item[] = [];
  private running = 0;

  constructor(
    private readonly generate: Generate,
    private readonly maxSentences: number,
    private readonly lanes: number,
  ) {}

  /** The best hypothesis of each source, in order, once all of them are generated. */
  translate(sources: number[][], targetId: number, beams: number, maxLength: number, ctx: RunnerContext): Promise<Hypothesis[]> {
    if (sources.length === 0) return Promise.resolve([]);
    if (ctx.signal.aborted) return Promise.reject(new EngineCancelledError());
    return new Promise((resolve, reject) => {
      const job: Job = {
        key: `${targetId}/${beams}/${maxLength}`,
        targetId,
        beams,
        maxLength,
        results: new Array<Hypothesis>(sources.length),
        left: sources.length,
        settled: false,
        resolve,
        reject,
      };
      ctx.signal.addEventListener('abort', () => this.fail(job, new EngineCancelledError()), { once: true });
      sources.forEach((ids, index) => this.waiting.push({ job, index, ids }));
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.lanes && this.waiting.length > 0) {
      const key = this.waiting[0]!.job.key;
      const batch: Item[] = [];
      const rest: Item[] = [];
      for (const item of this.waiting) (item.job.key === key && batch.length < this.maxSentences ? batch : rest).push(item);
      this.waiting = rest;
      this.running++;
      void this.run(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async run(batch: Item[]): Promise<void> {
    const { targetId, beams, maxLength } = batch[0]!.job;
    const hooks: BatchHooks = {
      cancelled: (sentence) => batch[sentence]!.job.settled,
      finished: (sentence, best) => {
        const { job, index } = batch[sentence]!;
        if (job.settled) return;
        job.results[index] = best;
        if (--job.left === 0) {
          job.settled = true;
          job.resolve(job.results);
        }
      },
      checkpoint: yieldToEventLoop,
    };
    try {
      await this.generate(
        batch.map((item) => item.ids),
        targetId,
        beams,
        maxLength,
        hooks,
      );
    } catch (err) {
      for (const { job } of batch) this.fail(job, err);
      return;
    }
    for (const { job, index } of batch) if (job.results[index] === undefined) this.fail(job, new Error('a translation ended without a hypothesis'));
  }

  /** Settles a job with an error and forgets its waiting sentences (its running rows go at the next step). */
  private fail(job: Job, err: unknown): void {
    if (job.settled) return;
    job.settled = true;
    this.waiting = this.waiting.filter((item) => item.job !== job);
    job.reject(err);
  }
}
