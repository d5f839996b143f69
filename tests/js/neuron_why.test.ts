// The neuron view's "why" panel: reading a why: chunk, the largest parts and "other", and
// where a click on a source goes (js/views/neuron/neuron_why.ts).
import { describe, expect, it } from "vitest";
import { jumpTo, largest, readWhy, sourcePlace, type Part } from "../../js/views/neuron/neuron_why";
import type { Chunk, StreamMeta } from "../../js/wire/types";

const f32 = (xs: number[]) => ({ dtype: "f32" as const, shape: [xs.length], data: Float32Array.from(xs) });

describe("why panel", () => {
  it("reads a why: chunk into sources, pairs and the score", () => {
    const names = new TextEncoder().encode(["embed", "L0H1", "embed", "L0.mlp"].join("\n"));
    const chunk: Chunk = {
      key: "why:self:1:0:3:2",
      arrays: {
        names: { dtype: "u8", shape: [names.length], data: names },
        query: f32([0.5, 2.25]), key: f32([3, -0.25]),
        pair_index: { dtype: "u32", shape: [2, 2], data: Uint32Array.from([1, 0, 0, 0]) },
        pair: f32([2, 1]), score: f32([2.75]),
      },
    };
    const w = readWhy(chunk);
    expect(w.query.map((p) => [p.name, p.value])).toEqual([["embed", 0.5], ["L0H1", 2.25]]);
    expect(w.key.map((p) => p.name)).toEqual(["embed", "L0.mlp"]);
    expect(w.pairs.map((p) => [p.name, p.value])).toEqual([["L0H1 · embed", 2], ["embed · embed", 1]]);
    expect(w.score).toBe(2.75);
  });

  it("keeps the largest parts by size and gives the rest as other", () => {
    const parts: Part[] = [1, -5, 0.5, 3].map((value, i) => ({ name: `s${i}`, value, side: "query", names: [`s${i}`] }));
    const { top, other, others } = largest(parts, -0.5, 2);
    expect(top.map((p) => p.name)).toEqual(["s1", "s3"]);
    expect(other).toBeCloseTo(1.5, 12); // -0.5 - (-5 + 3)
    expect(others).toBe(2);
  });

  it("sends a head or an MLP to the head view at the position it wrote", () => {
    const sm = { layers: [0, 1, 2, 3] } as StreamMeta;
    expect(sourcePlace("L2H7")).toEqual({ layer: 2, head: 7 });
    expect(sourcePlace("L10.mlp")).toEqual({ layer: 10, head: null });
    expect(sourcePlace("embed")).toBeNull();
    expect(jumpTo("L2H7", 5, sm)).toEqual({ view: "head", layer: 2, heads: [7], head: 7, query: 5 });
    expect(jumpTo("L1.mlp", 3, sm)).toEqual({ view: "head", layer: 1, query: 3 });
    expect(jumpTo("L9H0", 3, sm)).toBeNull(); // a layer the trace did not capture
    expect(jumpTo("pos_embed", 3, sm)).toBeNull();
  });
});
