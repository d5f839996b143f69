import { describe, expect, it } from "vitest";
import { isolate } from "../../js/label_text";
import type { TopRows } from "../../js/views/head/head_lines";
import {
  asTopRows, decodeTop, densify, hideTokens, keepQueries, logWeight, mergeWords, stackHeads, summedKeys, type Rows,
} from "../../js/views/head/head_transform";
import { hiddenTokens, summedRows, wordSide, wordStarts, displayOf } from "../../js/views/head/head_analysis";
import { headOrder, cellNumbers, finiteRange } from "../../js/views/model/model_stats";
import type { Meta } from "../../js/wire/types";

/** Dense rows (heads × queries × keys) from nested arrays. */
const dense = (w: number[][][]): Rows => ({
  heads: w.length, queries: w[0]!.length, keys: w[0]![0]!.length, slots: w[0]![0]!.length, index: null,
  value: Float32Array.from(w.flat(2)),
});
const rowsOf = (r: Rows): number[][][] => {
  const d = densify(r);
  return Array.from({ length: d.heads }, (_, h) => Array.from({ length: d.queries }, (_, q) =>
    Array.from(d.value.subarray((h * d.queries + q) * d.keys, (h * d.queries + q + 1) * d.keys), (v) => Math.round(v * 1e5) / 1e5)));
};

describe("head transforms", () => {
  it("decodes top rows, sparse or dense, and stacks pseudo-heads after the real ones", () => {
    const top: TopRows = { index: Uint16Array.from([1, 0, 0, 1]), weight: Uint8Array.from([255, 85, 255, 255]), rowmax: Float32Array.from([0.75, 0.5]), queries: 2, slots: 2 };
    const real = decodeTop(top, 1, 2);
    expect(rowsOf(real)).toEqual([[[0.25, 0.75], [0.5, 0.5]]]);
    const both = stackHeads(real, dense([[[1, 0], [0, 1]]]));
    expect(both.heads).toBe(2);
    expect(rowsOf(both)).toEqual([[[0.25, 0.75], [0.5, 0.5]], [[1, 0], [0, 1]]]);
  });

  it("hides keys and queries and renormalises each row over the keys left", () => {
    const r = dense([[[0.6, 0.3, 0.1], [0.5, 0.25, 0.25], [0.8, 0.1, 0.1]]]);
    const out = hideTokens(r, [1, 0, 0], [1, 0, 0]);
    expect(rowsOf(out)).toEqual([[[0, 0, 0], [0, 0.5, 0.5], [0, 0.5, 0.5]]]);
    const sparse: Rows = { heads: 1, queries: 1, keys: 4, slots: 2, index: [0, 2], value: Float32Array.from([0.5, 0.4]) };
    expect(rowsOf(hideTokens(sparse, [0], [1, 0, 0, 0]))).toEqual([[[0, 0, 0.8, 0]]]);
  });

  it("merges pieces into words as attnscope.analysis.merge_words (its doctest's numbers)", () => {
    const r = dense([[[0.5, 0.25, 0.25], [0, 0.5, 0.5], [0.5, 0.25, 0.25]]]);
    expect(rowsOf(mergeWords(r, [0, 1, 1], [0, 1, 1]))).toEqual([[[0.5, 0.5], [0.25, 0.75]]]);
  });

  it("merges a long input's words into rows of the key words they reach (no heads × words² array), equal to the dense merge", () => {
    // 2 heads, 7 tokens of 4 words, top 3 keys per row.
    const queryWords = [0, 1, 1, 2, 2, 2, 3], keyWords = queryWords;
    const index = [], value = [];
    for (let row = 0; row < 14; row++) {
      index.push(row % 7, (row + 2) % 7, (row + 5) % 7);
      value.push(0.5, 0.3, row % 3 === 0 ? 0 : 0.2);
    }
    const r: Rows = { heads: 2, queries: 7, keys: 7, slots: 3, index, value: Float32Array.from(value) };
    const dense = mergeWords(r, queryWords, keyWords);
    expect(dense.index).toBeNull();
    const sparse = mergeWords(r, queryWords, keyWords, 0);
    expect(sparse.index).not.toBeNull();
    expect(sparse.slots).toBeLessThan(dense.slots * 2);
    const got = rowsOf(densify(sparse)), want = rowsOf(dense);
    got.forEach((head, h) => head.forEach((row, q) => row.forEach((v, k) => expect(v).toBeCloseTo(want[h]![q]![k]!, 6))));
    // A word of many pieces keeps twice a token's slots: its strongest key words.
    const pieces: Rows = { heads: 1, queries: 3, keys: 3, slots: 1, index: [0, 1, 2], value: Float32Array.from([0.9, 0.6, 0.3]) };
    const merged = mergeWords(pieces, [0, 0, 0], [0, 1, 2], 0);
    expect([merged.slots, Array.from(merged.index!)]).toEqual([2, [0, 1]]);
    Array.from(merged.value).forEach((v, i) => expect(v).toBeCloseTo([0.3, 0.2][i]!, 6));
    for (let row = 0; row < 8; row++) { // strongest first
      const w = Array.from(sparse.value.subarray(row * sparse.slots, (row + 1) * sparse.slots));
      expect(w).toEqual([...w].sort((a, b) => b - a));
    }
  });

  it("keeps and sums several queries, max over heads", () => {
    const r = dense([[[0.5, 0.5], [1, 0]], [[0, 1], [0, 1]]]);
    expect(rowsOf(keepQueries(r, [1]))).toEqual([[[0, 0], [1, 0]], [[0, 0], [0, 1]]]);
    const out = new Float32Array(2);
    summedKeys(out, r, [0], [0, 1]);
    expect(Array.from(out)).toEqual([1.5, 0.5]); // attnscope.analysis.query_sum's doctest
    summedKeys(out, r, [0, 1], [0, 1]);
    expect(Array.from(out)).toEqual([1.5, 2]);
  });

  it("log scale spans three decades and feeds the line collector as bytes", () => {
    expect([logWeight(1), logWeight(0.1), logWeight(0.001), logWeight(1e-5), logWeight(0)].map((v) => Math.round(v * 1e6) / 1e6))
      .toEqual([1, 0.666667, 0, 0, 0]);
    const top = asTopRows(dense([[[0.2, 0.8]]]));
    expect(Array.from(top.weight, (v) => Math.round(v))).toEqual([64, 255]); // relative to the row's max
    expect(Array.from(top.rowmax, (v) => Math.round(v * 1e6) / 1e6)).toEqual([0.8]);
  });

  it("words: joined labels, first pieces, hidden tokens, summed display rows", () => {
    const side = {
      labels: ["[CLS]", "play", "·ing", "cards"], raw: ["[CLS]", "play", "##ing", "cards"],
      kinds: ["special", "token", "token", "token"] as const, continues: [false, false, true, false], segments: null,
    };
    const words = [0, 1, 1, 2];
    expect(wordSide({ ...side, kinds: [...side.kinds] }, words).labels).toEqual(["[CLS]", "playing", "cards"]);
    expect(wordStarts(words)).toEqual([0, 1, 3]);
    expect(Array.from(hiddenTokens({ ...side, kinds: [...side.kinds] }))).toEqual([1, 0, 0, 0]);
    const meta = {
      sides: { source: { labels: ["[CLS]", "play", "ing", "cards"], raw: side.raw, kinds: [...side.kinds], continues: side.continues, words }, target: null },
      streams: { self: { query_side: "source", key_side: "source", layers: [0], num_heads: 1, q_len: 4, k_len: 4, head_dim: null, thumb_rows: 4, thumb_cols: 4, top_k: 4 } },
    } as Meta;
    const d = displayOf(meta, meta.streams.self!, true);
    expect(d.sideQ.labels).toEqual(["[CLS]", "playing", "cards"]);
    expect(summedRows(d, [1, 2])).toEqual([]); // two pieces of one word: one row, nothing to sum
    expect(summedRows(d, [2, 3])).toEqual([1, 2]);
    expect(displayOf(meta, meta.streams.self!, false).sideQ.labels).toHaveLength(4);
  });
});

describe("model statistics", () => {
  it("orders each layer's heads strongest first, NaN last", () => {
    const values = Float32Array.from([0.1, 0.9, NaN, 0.5, 3, 2, 1, 0]);
    expect(Array.from(headOrder(values, 2, 4))).toEqual([1, 3, 0, 2, 0, 1, 2, 3]);
    expect(finiteRange(values)).toEqual({ min: 0, max: 3 });
  });

  it("lists every statistic of a cell", () => {
    const chunk = { key: "stats:self", arrays: {
      sink: { dtype: "f32" as const, shape: [1, 2], data: Float32Array.from([0.5, 0.25]) },
      prev: { dtype: "f32" as const, shape: [1, 2], data: Float32Array.from([NaN, 0.125]) },
    } };
    const stats = [{ name: "sink", label: "", formula: "", source: "" }, { name: "prev", label: "", formula: "", source: "" }];
    expect(cellNumbers(chunk, stats, 2, 0, 1)).toEqual([`${isolate("sink")} 0.25`, `${isolate("prev")} 0.13`]); // names isolated
    expect(cellNumbers(chunk, stats, 2, 0, 0)).toEqual([`${isolate("sink")} 0.50`, `${isolate("prev")} n/a`]);
  });
});
