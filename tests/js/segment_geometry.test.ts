// The head view's segments mode without a DOM: where rows sit and which lines a draw paints.
import {
  SEGMENT_MIN_WEIGHT, SEGMENT_ROW, segmentKeyWeights, segmentLayout, segmentLines, segmentOf, segmentY,
} from "../../js/views/head/segment_geometry";

/** `mass[h][a][b]` flattened as the `segments:` chunk holds it: (heads, S, S). */
const massOf = (m: number[][][]): Float32Array => Float32Array.from(m.flat(2));
// Two heads over three segments; head 0 is causal, head 1 looks at segment 0 only.
const mass = massOf([
  [[1, 0, 0], [0.6, 0.4, 0], [0.2, 0.3, 0.5]],
  [[1, 0, 0], [1, 0, 0], [1, 0, 0]],
]);

describe("segment layout", () => {
  it("gives each segment a row and runs lines between the label columns", () => {
    const g = segmentLayout(3, 900);
    expect(g.height).toBe(3 * SEGMENT_ROW);
    expect(g.colW).toBe(220);
    expect([g.x0, g.x1]).toEqual([220, 680]);
    expect(segmentY(2)).toBe(2.5 * SEGMENT_ROW);
  });

  it("narrows the label columns to a third of a narrow view, never under 60 pixels", () => {
    expect(segmentLayout(3, 300).colW).toBe(100);
    expect(segmentLayout(3, 90).colW).toBe(60);
    expect(segmentLayout(3, 90).x1).toBeGreaterThanOrEqual(segmentLayout(3, 90).x0);
  });
});

describe("segment lines", () => {
  it("draws every pair with mass, per shown head, faint first", () => {
    const lines = segmentLines(mass, 3, [0], null);
    expect(lines.map((l) => [l.a, l.b, Number(l.w.toFixed(2))])).toEqual([
      [2, 0, 0.2], [2, 1, 0.3], [1, 1, 0.4], [2, 2, 0.5], [1, 0, 0.6], [0, 0, 1],
    ]);
    expect(lines.every((l) => l.head === 0)).toBe(true);
    expect(segmentLines(mass, 3, [1], null).map((l) => [l.a, l.b])).toEqual([[0, 0], [1, 0], [2, 0]]);
    expect(segmentLines(mass, 3, [0, 1], null)).toHaveLength(9);
  });

  it("keeps only the focused segment's lines: out of a query segment, into a key segment", () => {
    expect(segmentLines(mass, 3, [0, 1], { side: "query", i: 1 }).map((l) => [l.head, l.b])).toEqual([[0, 1], [0, 0], [1, 0]]);
    expect(segmentLines(mass, 3, [0, 1], { side: "key", i: 2 }).map((l) => [l.head, l.a])).toEqual([[0, 2]]);
  });

  it("leaves out faint and NaN mass, heads past the chunk, and keeps the strongest over the cap", () => {
    const faint = massOf([[[SEGMENT_MIN_WEIGHT / 2, Number.NaN], [0.5, 0.5]]]);
    expect(segmentLines(faint, 2, [0, 3], null).map((l) => [l.a, l.b])).toEqual([[1, 0], [1, 1]]);
    const capped = segmentLines(mass, 3, [0], null, 2);
    expect(capped.map((l) => l.w)).toEqual([0.6000000238418579, 1]);
  });

  it("gives the focused query segment's key bars as the largest mass over the shown heads", () => {
    expect(Array.from(segmentKeyWeights(mass, 3, [0, 1], { side: "query", i: 1 }) ?? [])).toEqual([1, 0.4000000059604645, 0]);
    expect(segmentKeyWeights(mass, 3, [0], { side: "key", i: 1 })).toBeNull();
    expect(segmentKeyWeights(mass, 3, [0], null)).toBeNull();
  });
});

describe("segment of a token", () => {
  it("finds the segment whose edges hold the token", () => {
    const edges = [0, 3, 7, 10];
    expect([0, 2, 3, 6, 7, 9].map((t) => segmentOf(edges, t))).toEqual([0, 0, 1, 1, 2, 2]);
    expect([segmentOf(edges, 10), segmentOf(edges, -1), segmentOf([0], 0)]).toEqual([-1, -1, -1]);
  });
});
