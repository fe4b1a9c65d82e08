/**
 * How a CTC model's realtime turns are encoded while they are spoken (manifest `options.streaming`; the
 * realtime side's chunked-turn.ts does the scheduling). A chunk runs the model on [left context | new audio |
 * lookahead] and keeps the frames of the new audio only, so the turn's CTC path is built piece by piece and
 * the end of a turn costs about one chunk, not a re-decode of the whole turn.
 *
 * Chunk size adapts to load: while the model has a free place a turn is encoded in small steps
 * (`minChunkSeconds`, so that a lone caller's final is ready right after speech ends, and interims move
 * often); once jobs queue, a turn waits until `chunkSeconds` of new audio have built up, so less of the
 * machine goes to re-running context. Context costs `(left + right) / chunk` extra model time per chunk.
 *
 * Accuracy: a frame sees `leftSeconds` back and `rightSeconds` ahead of itself at the least (more inside a
 * chunk). For convolutional models whose receptive field fits in that context (the demo models) the frames
 * equal those of the whole turn; full-attention models (wav2vec2, XLS-R, MMS) see less than the whole turn,
 * which costs some accuracy on long turns — raise the context, or set `finalRedecodeSeconds` to decode
 * turns up to that length whole when the model has a free place.
 *
 * Convolutional NeMo models (QuartzNet, Jasper: receptive field ±40 s, beyond any context) stream statefully
 * instead when their graph and features allow it (`stateful`, ctc-stream.ts; the runner's info says
 * `stateful` and, when not, `statefulRefusal`): each chunk is the new audio only, the model's conv state is
 * carried, and the frames are exactly the whole turn's. Context and `finalRedecodeSeconds` do not apply to
 * them. Audio fed to a state cannot be taken back, so the last `holdbackSeconds` of a turn are not fed
 * until its end is known: the turn's end is decided after some silence (the VAD's silence duration), and a
 * turn that ends before what was fed is decoded again whole (exact too, at the cost of a whole-turn run).
 * Exactness has a price set by the model: a frame comes out only once the audio it reads ahead has come
 * (info `statefulLookaheadSeconds`; QuartzNet 15×5: 40 s), so such a model gives no interims in shorter
 * turns, and the final computes every layer's pending frames — about a whole-turn run for turns shorter
 * than the lookahead, bounded beyond it. Each piece also reads all the weights once (≈ 25 ms of CPU at
 * QuartzNet size): `minChunkSeconds` of 2 or more keeps that overhead small (load-tests/real-size/
 * quartznet-stream.ts measures both).
 */
import { z } from 'zod';

export const StreamingSchema = z
  .object({
    /** Audio before the new audio that a chunk re-reads for context. */
    leftSeconds: z.number().min(0).max(30).default(1),
    /** Audio after the new audio that a chunk reads ahead (its frames are kept by the next chunk). */
    rightSeconds: z.number().min(0).max(10).default(0.5),
    /** New audio per chunk once the model is busy (the efficient size). */
    chunkSeconds: z.number().min(0.1).max(60).default(4),
    /** New audio per chunk while the model has a free place (the responsive size). */
    minChunkSeconds: z.number().min(0.05).max(60).default(0.5),
    /** Turns up to this long are decoded whole for their final when the model is idle (0: never). */
    finalRedecodeSeconds: z.number().min(0).max(120).default(0),
    /** Stream convolutional models statefully when they allow it (exact frames); false: chunks with context. */
    stateful: z.boolean().default(true),
    /**
     * Stateful streams: audio held back from the state until the turn's end is known. Keep it at least the
     * VAD's silence duration (default 500 ms) plus its lag, or turns are decoded again whole at their end.
     */
    holdbackSeconds: z.number().min(0).max(30).default(1),
  })
  .refine((s) => s.minChunkSeconds <= s.chunkSeconds, { message: 'minChunkSeconds must not exceed chunkSeconds' });

export type StreamingOptions = z.infer<typeof StreamingSchema>;
