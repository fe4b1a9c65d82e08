/**
 * The decoding searches of the NLLB runner, as pure functions over one decoder step's logits: greedy, and
 * beam search with length-normalised scores (transformers' rules: keep the best `size` finished
 * hypotheses per row, stop a row when no live beam can beat them). The runner owns the model calls and
 * reorders its KV caches by the `source` index each step returns.
 */

export interface Beam {
  sentence: number;
  tokens: number[];
  /** Sum of log-probabilities (beam search only). */
  score: number;
}

export interface Hypothesis {
  tokens: number[];
  /** Ended with `</s>` (not cut by max_length). */
  ended: boolean;
  /** Length-normalised score: log-probability sum / generated length (HF length_penalty 1.0). */
  normalized: number;
}

/** The next live rows, and for each the row of the previous step it continues (to reorder caches). */
export interface Step {
  beams: Beam[];
  sources: number[];
}

function argmax(values: Float32Array): number {
  let best = 0;
  for (let v = 1; v < values.length; v++) if (values[v]! > values[best]!) best = v;
  return best;
}

/** `maxNew(sentence)`: the most tokens that sentence may write (its own output-length bound). */
export function greedyStep(live: Beam[], logits: Float32Array[], eos: number, maxNew: (sentence: number) => number, done: Hypothesis[][]): Step {
  const step: Step = { beams: [], sources: [] };
  live.forEach((beam, row) => {
    const token = argmax(logits[row]!);
    if (token === eos) return void done[beam.sentence]!.push({ tokens: beam.tokens, ended: true, normalized: 0 });
    const tokens = [...beam.tokens, token];
    if (tokens.length >= maxNew(beam.sentence)) return void done[beam.sentence]!.push({ tokens, ended: false, normalized: 0 });
    step.beams.push({ sentence: beam.sentence, tokens, score: 0 });
    step.sources.push(row);
  });
  return step;
}

function keepBest(list: Hypothesis[], hypothesis: Hypothesis, size: number): void {
  list.push(hypothesis);
  list.sort((a, b) => b.normalized - a.normalized);
  if (list.length > size) list.pop();
}

/**
 * One beam-search step for every live sentence (rows grouped by sentence, `size` per sentence), as
 * transformers does it: the best 2·size continuations; `</s>` among the best `size` closes a hypothesis;
 * a sentence is done when it has `size` hypotheses none of which its best live beam can still beat.
 */
export function beamStep(live: Beam[], logits: Float32Array[], size: number, eos: number, maxNew: (sentence: number) => number, done: Hypothesis[][]): Step {
  const step: Step = { beams: [], sources: [] };
  for (let start = 0; start < live.length; start += size) {
    const sentence = live[start]!.sentence;
    const candidates: Array<{ row: number; token: number; score: number }> = [];
    for (let row = start; row < start + size; row++) {
      if (live[row]!.score === -Infinity) continue; // step 0: the copies of beam 0 wait
      const values = logits[row]!;
      let max = -Infinity;
      for (const v of values) if (v > max) max = v;
      let sum = 0;
      for (const v of values) sum += Math.exp(v - max);
      const logZ = max + Math.log(sum);
      const top: number[] = [];
      for (let v = 0; v < values.length; v++) {
        if (top.length === 2 * size && values[v]! <= values[top.at(-1)!]!) continue;
        let at = top.length;
        while (at > 0 && values[top[at - 1]!]! < values[v]!) at--;
        top.splice(at, 0, v);
        if (top.length > 2 * size) top.pop();
      }
      for (const token of top) candidates.push({ row, token, score: live[row]!.score + values[token]! - logZ });
    }
    candidates.sort((a, b) => b.score - a.score);
    const next: Array<Beam & { row: number }> = [];
    for (let rank = 0; rank < candidates.length && next.length < size; rank++) {
      const { row, token, score } = candidates[rank]!;
      const tokens = live[row]!.tokens;
      if (token === eos) {
        if (rank < size) keepBest(done[sentence]!, { tokens, ended: true, normalized: score / (tokens.length + 1) }, size);
      } else next.push({ sentence, tokens: [...tokens, token], score, row });
    }
    const length = next[0]!.tokens.length;
    const list = done[sentence]!;
    if (length >= maxNew(sentence)) {
      for (const beam of next) keepBest(list, { tokens: beam.tokens, ended: false, normalized: beam.score / length }, size);
      continue;
    }
    if (list.length >= size && list.at(-1)!.normalized >= next[0]!.score / length) continue;
    for (const { row, ...beam } of next) {
      step.beams.push(beam);
      step.sources.push(row);
    }
  }
  return step;
}
