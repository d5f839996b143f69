// The front end's value-weighted rows against the Python reference (issue 36), on real MiniLM:
// tests/fixtures/value_weighted/minilm.json is written and checked by
// tests/test_value_weighted_views.py (attention, the widget's vnorm: and top: chunks, and
// attnscope.analysis.value_weighted.value_weighted_rows).
import { describe, expect, it } from "vitest";
import { analyse, displayOf } from "../../js/views/head/head_analysis";
import { densify, type Rows } from "../../js/views/head/head_transform";
import { valueWeighted } from "../../js/views/value_weight";
import type { Meta, StreamMeta } from "../../js/wire/types";
import fixture from "../fixtures/value_weighted/minilm.json";

interface Fixture {
  heads: number; queries: number; keys: number; top_slots: number;
  attention: number[]; norm: number[]; rowsum: number[]; expected: number[];
  top_weight: number[]; top_rowmax: number[];
}
const fx = fixture as unknown as Fixture;
const norms = { norm: Float32Array.from(fx.norm), rowsum: Float32Array.from(fx.rowsum) };

describe("value-weighted attention equals the Python reference", () => {
  it("from the layer's float32 weights, within 1e-5", () => {
    const rows: Rows = { heads: fx.heads, queries: fx.queries, keys: fx.keys, slots: fx.keys, index: null, value: Float32Array.from(fx.attention) };
    const got = densify(valueWeighted(rows, norms)).value;
    let worst = 0;
    got.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - (fx.expected[i] as number))); });
    expect(worst).toBeLessThan(1e-5);
  });

  it("through the head view's pipeline from the top: chunk's bytes, within their rounding", () => {
    const sm = { query_side: "source", key_side: "source", q_len: fx.queries, k_len: fx.keys, num_heads: fx.heads } as StreamMeta;
    const labels = Array.from({ length: fx.keys }, (_, i) => `t${i}`);
    const meta = { sides: { source: { labels, raw: labels, kinds: labels.map(() => "token") } }, streams: { self: sm } } as unknown as Meta;
    const top = { index: null, weight: Uint8Array.from(fx.top_weight), rowmax: Float32Array.from(fx.top_rowmax), queries: fx.queries, slots: fx.top_slots };
    const out = analyse({ top, heads: fx.heads, pseudo: null, pseudoHeads: 0, display: displayOf(meta, sm, false), hide: false, log: false, keep: [], values: norms });
    const got = densify(out.weights).value;
    for (let h = 0; h < fx.heads; h++) {
      for (let q = 0; q < fx.queries; q++) {
        // A byte is within rowmax / 510 of its weight; the weighting scales that by norm / rowsum.
        const row = h * fx.queries + q, rowmax = fx.top_rowmax[row] as number, sum = fx.rowsum[row] as number;
        for (let k = 0; k < fx.keys; k++) {
          const tol = (rowmax / 510) * ((fx.norm[h * fx.keys + k] as number) / sum) * (1 + 1e-5) + 1e-7;
          expect(Math.abs((got[row * fx.keys + k] as number) - (fx.expected[row * fx.keys + k] as number))).toBeLessThanOrEqual(tol);
        }
      }
    }
  });
});
