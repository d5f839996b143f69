// The head view's analysis kept between draws (js/views/head/head_kept.ts): a block that
// arrives is decoded once, and the kept result equals `analyse` over the whole layer.
import { describe, expect, it } from "vitest";
import { analyse, displayOf, type AnalysisInput, type Analysed } from "../../js/views/head/head_analysis";
import { analyseKept, type Kept } from "../../js/views/head/head_kept";
import type { TopRows } from "../../js/views/head/head_lines";
import { decoded } from "../../js/views/head/head_transform";
import type { Meta, StreamMeta } from "../../js/wire/types";

const H = 2, Q = 64, S = 4, BLOCK = 16, P = 2;

/** A deterministic generator (no Math.random: the same rows each run). */
function lcg(seed: number): () => number {
  let x = seed;
  return () => { x = (x * 1664525 + 1013904223) >>> 0; return x / 2 ** 32; };
}

/** Every row of `heads` × Q: keys before or at the query, bytes and row maxima. */
function layer(heads: number, seed: number): TopRows {
  const r = lcg(seed);
  const index = new Uint16Array(heads * Q * S), weight = new Uint8Array(heads * Q * S), rowmax = new Float32Array(heads * Q);
  for (let row = 0; row < heads * Q; row++) {
    const q = row % Q;
    rowmax[row] = 0.2 + 0.8 * r();
    for (let t = 0; t < S; t++) { index[row * S + t] = Math.floor(r() * (q + 1)); weight[row * S + t] = t === 0 ? 255 : Math.floor(r() * 256); }
  }
  return { index, weight, rowmax, queries: Q, slots: S };
}

/** Rows of every key in key order (no index), as a pseudo-heads chunk may hold them. */
function denseLayer(heads: number, seed: number): TopRows {
  const r = lcg(seed);
  const weight = Uint8Array.from({ length: heads * Q * Q }, () => Math.floor(r() * 256));
  return { index: null, weight, rowmax: Float32Array.from({ length: heads * Q }, () => r()), queries: Q, slots: Q };
}

/** The layer as head_blocks.ts assembles it: only the blocks in `firsts` hold rows. */
function assembled(full: TopRows, firsts: readonly number[]): TopRows {
  const index = new Uint16Array(H * Q * S), weight = new Uint8Array(H * Q * S), rowmax = new Float32Array(H * Q);
  for (const first of firsts) {
    for (let hd = 0; hd < H; hd++) {
      const a = hd * Q + first, b = a + BLOCK;
      index.set((full.index as Uint16Array).subarray(a * S, b * S), a * S);
      weight.set((full.weight as Uint8Array).subarray(a * S, b * S), a * S);
      rowmax.set((full.rowmax as Float32Array).subarray(a, b), a);
    }
  }
  return { index, weight, rowmax, queries: Q, slots: S };
}

const labels = Array.from({ length: Q }, (_, i) => (i === 0 ? "[CLS]" : `t${i}`));
const sm = { query_side: "source", key_side: "source", q_len: Q, k_len: Q, num_heads: H, top_k: S, top_block: BLOCK } as StreamMeta;
const words = Array.from({ length: Q }, (_, i) => Math.floor((i + 1) / 2));
const meta = {
  sides: { source: { labels, raw: labels, kinds: labels.map((_, i) => (i === 0 ? "special" : "token")), continues: labels.map((_, i) => i % 2 === 0 && i > 0), words } },
  streams: { self: sm },
} as unknown as Meta;

/** Every number of a result, in plain arrays (index as numbers whatever its type). */
const numbers = (a: Analysed) => ({
  lineIndex: a.lines.index ? Array.from(a.lines.index) : null, lineWeight: Array.from(a.lines.weight), rowmax: Array.from(a.lines.rowmax),
  weights: Array.from(a.weights.value), weightIndex: a.weights.index ? Array.from(a.weights.index) : null,
  shape: [a.weights.heads, a.weights.queries, a.weights.keys, a.weights.slots, a.lines.queries, a.lines.slots],
});

const norms = (() => {
  const r = lcg(7);
  return { norm: Float32Array.from({ length: H * Q }, () => 0.5 + r()), rowsum: Float32Array.from({ length: H * Q }, () => 0.5 + r()) };
})();

const cases: [string, Partial<AnalysisInput>][] = [
  ["plain rows", {}],
  ["hidden tokens, log scale, two queries summed", { hide: true, log: true, keep: [20, 40] }],
  ["pseudo-heads beside the real ones", { pseudo: layer(P, 3), pseudoHeads: P, hide: true }],
  ["weighted by value norm", { values: norms, log: true }],
  ["pseudo-heads of every key (both sides dense, as stackHeads makes them)", { pseudo: denseLayer(P, 9), pseudoHeads: P, keep: [5, 33] }],
];

describe("the head view's kept analysis", () => {
  for (const [name, options] of cases) {
    it(`${name}: a draw after one more block decodes that block alone, and equals a whole-layer analyse`, () => {
      const full = layer(H, 1);
      const input = (firsts: number[]): AnalysisInput => ({
        top: assembled(full, firsts), heads: H, pseudo: null, pseudoHeads: 0,
        display: displayOf(meta, sm, false), hide: false, log: false, keep: [], ...options,
      });
      const ranges = (firsts: number[]) => firsts.map((f) => [f, f + BLOCK] as const);
      let kept: Kept | null = null;
      const arrivals = [16, 48, 0];
      for (let n = 1; n <= arrivals.length; n++) {
        const firsts = arrivals.slice(0, n), a = input(firsts);
        const before = decoded.rows;
        kept = analyseKept(kept, "layer|switches", `rev${n}`, a, ranges(firsts));
        const pseudoRows = n === 1 && a.pseudo ? P * Q : 0; // the pseudo-heads' chunk: every row, once
        expect(decoded.rows - before).toBe(H * BLOCK + pseudoRows);
        expect(numbers(kept.value)).toEqual(numbers(analyse(a)));
        // A draw with nothing new decodes nothing and keeps the same arrays.
        const again = decoded.rows, value = kept.value;
        kept = analyseKept(kept, "layer|switches", `rev${n}`, a, ranges(firsts));
        expect(decoded.rows).toBe(again);
        expect(kept.value).toBe(value);
      }
      // Another switch (signature) starts over: every loaded block once more.
      const a = input(arrivals), before = decoded.rows;
      kept = analyseKept(kept, "layer|other", "rev3", a, ranges(arrivals));
      expect(decoded.rows - before).toBe(H * BLOCK * arrivals.length + (a.pseudo ? P * Q : 0));
      expect(numbers(kept.value)).toEqual(numbers(analyse(a)));
    });
  }

  it("words merge query rows across blocks: the whole layer again when a block arrives", () => {
    const full = layer(H, 5);
    const a = (firsts: number[]): AnalysisInput => ({
      top: assembled(full, firsts), heads: H, pseudo: null, pseudoHeads: 0, display: displayOf(meta, sm, true), hide: false, log: false, keep: [],
    });
    let kept = analyseKept(null, "words", "rev1", a([0]), [[0, BLOCK]]);
    expect(numbers(kept.value)).toEqual(numbers(analyse(a([0]))));
    const value = kept.value;
    kept = analyseKept(kept, "words", "rev1", a([0]), [[0, BLOCK]]);
    expect(kept.value).toBe(value);
    kept = analyseKept(kept, "words", "rev2", a([0, 16]), [[0, BLOCK], [16, 32]]);
    expect(numbers(kept.value)).toEqual(numbers(analyse(a([0, 16]))));
  });
});
