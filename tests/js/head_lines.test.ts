// The head view's geometry without a DOM: which lines a draw keeps and where they run.
import {
  BUCKETS, collectLines, COL_W, emptyLines, focusedQuery, groupLines, headLayout, keyWeights, MAX_VIEW_H,
  offscreenKeys, OVERSCAN, ROW, rowY, visibleRows, type LineFilter, type Lines, type TopRows,
} from "../../js/views/head/head_lines";

/** A `top:` chunk with every key in order: `w[h][q][k]` as weight bytes, each row's max 1. */
function topOf(w: number[][][]): TopRows {
  const H = w.length, Q = w[0]!.length, K = w[0]![0]!.length;
  return { index: null, weight: Uint8Array.from(w.flat(2)), rowmax: new Float32Array(H * Q).fill(1), queries: Q, slots: K };
}
const all: LineFilter = { heads: [0], query: -1, key: -1, pairFilter: "all", segQ: null, segK: null, cap: 100 };
const collect = (top: TopRows, f: Partial<LineFilter> = {}, keys = top.slots): Lines =>
  collectLines(emptyLines(), top, headLayout(top.queries, keys, 800, 0), { ...all, ...f });
/** The kept lines as [query row, key row, weight] (rows recovered from the y positions). */
const kept = (l: Lines): [number, number, number][] =>
  Array.from({ length: l.n }, (_, i) => [((l.yq[i] as number) - ROW / 2) / ROW, ((l.yk[i] as number) - ROW / 2) / ROW, Number((l.w[i] as number).toFixed(3))]);

describe("head layout", () => {
  it("covers the visible rows plus overscan and runs lines between the token columns", () => {
    const g = headLayout(100, 80, 800, 10 * ROW);
    expect(g.rows).toBe(100);
    expect(g.height).toBe(MAX_VIEW_H);
    expect(g.first).toBe(10 - OVERSCAN);
    expect(g.last).toBe(Math.ceil((10 * ROW + MAX_VIEW_H) / ROW) + OVERSCAN);
    expect([g.x0, g.x1]).toEqual([COL_W + 2, 800 - COL_W - 2]);
    expect(visibleRows(g)).toEqual({ first: 10, last: g.last - OVERSCAN });
  });

  it("is as short as its rows and never narrower than both columns", () => {
    const g = headLayout(3, 5, 10, 0);
    expect(g.height).toBe(5 * ROW);
    expect(g.width).toBe(2 * COL_W + 120);
    expect([g.first, g.last]).toEqual([0, 4]);
  });
});

describe("which query is focused", () => {
  it("is the hovered query, else the selected one; a hovered key focuses none", () => {
    expect(focusedQuery({ side: "query", i: 4 }, 2)).toBe(4);
    expect(focusedQuery({ side: "key", i: 4 }, 2)).toBe(-1);
    expect(focusedQuery(null, 2)).toBe(2);
    expect(focusedQuery(null, null)).toBe(-1);
  });
});

describe("collecting lines", () => {
  const top = topOf([[[255, 51, 0], [0, 255, 128]]]); // one head, queries 0-1, keys 0-2

  it("keeps every visible non-zero weight, placed at its rows' centres", () => {
    expect(kept(collect(top))).toEqual([[0, 0, 1], [0, 1, 0.2], [1, 1, 1], [1, 2, 0.502]]);
  });

  it("keeps only the focused query's lines, or only those to the focused key", () => {
    expect(kept(collect(top, { query: 1 }))).toEqual([[1, 1, 1], [1, 2, 0.502]]);
    expect(kept(collect(top, { key: 1 }))).toEqual([[0, 1, 0.2], [1, 1, 1]]);
  });

  it("past the cap, drops the weakest lines first", () => {
    expect(kept(collect(top, { cap: 2 })).map(([, , w]) => w)).toEqual([1, 1]);
    expect(kept(collect(top, { cap: 3 })).map(([, , w]) => w).sort()).toEqual([0.502, 1, 1]);
  });

  it("applies the pair filter only when both sides have segments", () => {
    const seg = [0, 1, 1];
    expect(kept(collect(top, { pairFilter: "AB", segQ: seg, segK: seg }))).toEqual([[0, 1, 0.2]]);
    expect(collect(top, { pairFilter: "AB", segQ: seg, segK: null }).n).toBe(4);
  });

  it("reads keys from the index of a top-k chunk and scales bytes by the row's max", () => {
    const topK: TopRows = { index: Uint16Array.of(2, 0, 1, 2), weight: Uint8Array.of(255, 51, 255, 0), rowmax: Float32Array.of(0.5, 0.25), queries: 2, slots: 2 };
    expect(kept(collect(topK, {}, 3))).toEqual([[0, 2, 0.5], [0, 0, 0.1], [1, 1, 0.25]]);
  });

  it("pulls an end that lies off the visible rows to the edge, and counts those", () => {
    // Query q attends to key 59 - q only: the first queries' keys lie below the visible rows.
    const long = topOf([Array.from({ length: 60 }, (_, q) => Array.from({ length: 60 }, (_, k) => (k === 59 - q ? 255 : 0)))]);
    const g = headLayout(60, 60, 800, 0);
    const lines = collectLines(emptyLines(), long, g, all);
    expect(lines.n).toBe(g.last - g.first + 1);
    expect(Math.max(...lines.yk.subarray(0, lines.n))).toBe(g.height - 1);
    let below = 0;
    for (let q = g.first; q <= g.last; q++) if (rowY(59 - q, 0) >= g.height - 1) below++;
    expect(below).toBeGreaterThan(0);
    expect(offscreenKeys(lines, g.height)).toEqual({ above: 0, below });
  });

  it("reuses its buffers when they are large enough", () => {
    const first = collect(top);
    const again = collectLines(first, top, headLayout(2, 3, 800, 0), all);
    expect(again).toBe(first);
  });
});

describe("grouping lines for drawing", () => {
  it("orders (opacity step, head) groups weakest first, so the strongest lines are drawn on top", () => {
    const lines = emptyLines();
    const l = collectLines(lines, topOf([[[255, 26]], [[128, 0]]]), headLayout(1, 2, 800, 0), { ...all, heads: [0, 1] });
    const start = groupLines(l, 2);
    expect(start.length).toBe(2 * BUCKETS + 1);
    const drawn = Array.from(l.order.subarray(0, l.n), (i) => [l.head[i], Number((l.w[i] as number).toFixed(2))]);
    expect(drawn).toEqual([[0, 0.1], [1, 0.5], [0, 1]]);
    expect(start[2 * BUCKETS]).toBe(3);
  });
});

describe("the focused query's key weights", () => {
  it("are the largest over the heads, per key", () => {
    const out = new Float32Array(3);
    keyWeights(out, topOf([[[255, 0, 51]], [[0, 128, 255]]]), [0, 1], 0);
    expect(Array.from(out, (v) => Number(v.toFixed(3)))).toEqual([1, 0.502, 1]);
  });

  it("keep the sign of the largest change on a comparison's A − B (B attending more is negative)", () => {
    // Signed bytes as the diff chunk holds them: head 0 says key 1 went down, head 1 key 2 up.
    const signed: TopRows = { index: null, weight: Int8Array.of(0, -127, 20, 0, 10, 127), rowmax: Float32Array.of(1, 0.5), queries: 1, slots: 3, full: 127 };
    const out = new Float32Array(3);
    keyWeights(out, signed, [0, 1], 0, true);
    expect(Array.from(out, (v) => Number(v.toFixed(3)))).toEqual([0, -1, 0.5]);
    keyWeights(out, signed, [0, 1], 0);
    expect(Array.from(out, (v) => Number(v.toFixed(3)))).toEqual([0, 1, 0.5]);
  });
});

describe("row centres", () => {
  it("move up as the view scrolls", () => {
    expect(rowY(3, 0)).toBe(3 * ROW + ROW / 2);
    expect(rowY(3, ROW)).toBe(2 * ROW + ROW / 2);
  });
});
