// Comparisons (docs/protocol.md, "Comparisons"): signed chunks decoded, the
// diverging colours, side-prefixed keys, and the A / B / A − B switch in the app.
import { renderApp } from "../../js/app";
import { readTheme } from "../../js/colors";
import { sideData } from "../../js/compare_data";
import { decodeChunks, splitConcatenated } from "../../js/data";
import type { Chunk, CompareSide, Meta } from "../../js/wire/types";
import { divergingLut, SIGNED_ZERO, signedColor } from "../../js/views/compare/compare_colors";
import { paintSignedLines } from "../../js/views/compare/compare_head";
import { sideBySide } from "../../js/views/compare/compare_neuron_state";
import { divergenceNote, rankingOrder } from "../../js/views/compare/compare_grid";
import { collectLines, emptyLines, headLayout, topRowsOf } from "../../js/views/head/head_lines";
import { cellAt, poolInto } from "../../js/views/model/model_grid";
import type { Painter, Stroke } from "../../js/paint/painter";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext, type WireArray } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describe("signed chunks", () => {
  it("decode i8 as signed bytes from a DataView at an odd offset", () => {
    const values = Int8Array.of(-127, -1, 0, 64, 127);
    const big = new Uint8Array(values.length + 3);
    big.set(bytesOf(values), 3);
    const [chunk] = decodeChunks(
      { type: "chunks", chunks: [{ key: "diff/attn:self:0:0", arrays: [{ name: "weight", dtype: "i8", shape: [1, 5], buffer: 0 }] }] },
      [new DataView(big.buffer, 3, values.length)],
    );
    const weight = chunk!.arrays.weight!;
    expect(weight.data).toBeInstanceOf(Int8Array);
    expect(Array.from(weight.data)).toEqual([-127, -1, 0, 64, 127]);
  });

  it("split out of an embedded page chunk, 8-byte aligned after an i8 array", () => {
    const raw = new Uint8Array(16);
    raw.set(bytesOf(Int8Array.of(-5, 7, -127)), 0);
    raw.set(bytesOf(Float32Array.of(0.25)), 8);
    const arrays = splitConcatenated([{ name: "weight", dtype: "i8", shape: [3] }, { name: "rowmax", dtype: "f32", shape: [1] }], raw);
    expect(Array.from(arrays.weight!.data)).toEqual([-5, 7, -127]);
    expect(arrays.rowmax!.data[0]).toBe(0.25);
  });
});

describe("diverging colours", () => {
  for (const dark of [false, true]) {
    it(`run from --as-neg through the background to --as-pos (${dark ? "dark" : "light"})`, () => {
      const theme = readTheme(document.body, dark);
      const lut = divergingLut(theme);
      const at = (v: number): number[] => Array.from(lut.subarray((SIGNED_ZERO + v) * 4, (SIGNED_ZERO + v) * 4 + 3));
      expect(at(0)).toEqual(theme.bg);
      expect(at(127)).toEqual(theme.pos);
      expect(at(-127)).toEqual(theme.neg);
      // Farther from 0, farther from the background, on both sides.
      const dist = (v: number): number => at(v).reduce((s, c, i) => s + Math.abs(c - (theme.bg[i] as number)), 0);
      for (const v of [1, 16, 63]) {
        expect(dist(v * 2)).toBeGreaterThan(dist(v));
        expect(dist(-v * 2)).toBeGreaterThan(dist(-v));
      }
      expect(signedColor(0.5, theme)).not.toEqual(signedColor(-0.5, theme));
    });
  }

  it("pool signed thumbnails by the value of largest magnitude, keeping its sign", () => {
    const theme = readTheme(document.body, false);
    const lut = divergingLut(theme);
    const out = new Uint8ClampedArray(4);
    poolInto(Int8Array.of(30, -90, 60, 0), 2, 2, null, out, 1, 0, 0, 1, 1, lut, true);
    expect(Array.from(out.subarray(0, 3))).toEqual(Array.from(lut.subarray((SIGNED_ZERO - 90) * 4, (SIGNED_ZERO - 90) * 4 + 3)));
  });
});

describe("head view lines of A − B", () => {
  const signedTop = (): Chunk => ({
    key: "diff/top:self:0",
    arrays: {
      // One head, two queries, two keys: query 0 → key 1 went down, query 1 → key 0 went up.
      weight: { dtype: "i8", shape: [1, 2, 2], data: Int8Array.of(0, -127, 127, 64) },
      rowmax: { dtype: "f32", shape: [1, 2], data: Float32Array.of(0.2, 0.1) },
    },
  });

  it("keep both signs, each weight decoded as byte / 127 × rowmax", () => {
    const top = topRowsOf(signedTop(), 2, 2);
    expect(top.full).toBe(127);
    const lines = collectLines(emptyLines(), top, headLayout(2, 2, 600, 0), {
      heads: [0], query: -1, key: -1, pairFilter: "all", segQ: null, segK: null, cap: 100,
    });
    expect(Array.from(lines.w.subarray(0, lines.n)).map((v) => Number(v.toFixed(4)))).toEqual([-0.2, 0.1, 0.0504]);
  });

  it("stroke decreases in --as-neg and increases in --as-pos, the largest opaque", () => {
    const theme = readTheme(document.body, false);
    const top = topRowsOf(signedTop(), 2, 2);
    const lines = collectLines(emptyLines(), top, headLayout(2, 2, 600, 0), {
      heads: [0], query: -1, key: -1, pairFilter: "all", segQ: null, segK: null, cap: 100,
    });
    const strokes: [Stroke, number][] = [];
    const painter = { segments: (s: Stroke, each: (seg: () => void) => void) => { let n = 0; each(() => { n++; }); strokes.push([s, n]); } } as unknown as Painter;
    paintSignedLines(painter, lines, headLayout(2, 2, 600, 0), theme);
    const hex = (c: number[]): string => `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
    const neg = strokes.filter(([s]) => s.color === hex(theme.neg)), pos = strokes.filter(([s]) => s.color === hex(theme.pos));
    expect(neg.map(([, n]) => n)).toEqual([1]);
    expect(pos.map(([, n]) => n)).toEqual([1, 1]);
    expect(neg[0]![0].alpha).toBeGreaterThan(0.9); // the largest change
    expect(Math.max(...pos.map(([s]) => s.alpha ?? 1))).toBeLessThan(0.6); // half of it
  });
});

/** Two fixtures as a comparison's sides, `diff/` computed from them, as Python serves them. */
function comparison() {
  const fa = makeFixture({ seed: 7 }), fb = makeFixture({ seed: 11 });
  const { L, H, N } = fa;
  const diffChunk = (rest: string): { key: string; arrays?: WireArray[]; error?: string } => {
    const [kind, , layer, head] = rest.split(":");
    const d = (l: number, hd: number): Float32Array => fa.att[l]![hd]!.map((v, i) => v - (fb.att[l]![hd]![i] as number));
    const signed = (values: Float32Array, rows: number): { weight: Int8Array; rowmax: Float32Array } => {
      const cols = values.length / rows, weight = new Int8Array(values.length), rowmax = new Float32Array(rows);
      for (let r = 0; r < rows; r++) {
        let m = 0;
        for (let c = 0; c < cols; c++) m = Math.max(m, Math.abs(values[r * cols + c] as number));
        rowmax[r] = m;
        for (let c = 0; c < cols; c++) weight[r * cols + c] = m > 0 ? Math.round((127 * (values[r * cols + c] as number)) / m) : 0;
      }
      return { weight, rowmax };
    };
    if (kind === "thumbs") {
      const all = new Float32Array(L * H * N * N);
      for (let l = 0; l < L; l++) for (let hd = 0; hd < H; hd++) all.set(d(l, hd), (l * H + hd) * N * N);
      const { weight, rowmax } = signed(all, L * H);
      return { key: `diff/${rest}`, arrays: [
        { name: "thumbs", dtype: "i8" as WireArray["dtype"], shape: [L, H, N, N], bytes: bytesOf(weight) },
        { name: "absmax", dtype: "f32", shape: [L, H], bytes: bytesOf(rowmax) },
      ] };
    }
    const l = Number(layer);
    const values = kind === "top" ? new Float32Array(Array.from({ length: H }, (_, hd) => Array.from(d(l, hd))).flat()) : d(l, Number(head));
    const { weight, rowmax } = signed(values, kind === "top" ? H * N : N);
    return { key: `diff/${rest}`, arrays: [
      { name: "weight", dtype: "i8" as WireArray["dtype"], shape: kind === "top" ? [H, N, N] : [N, N], bytes: bytesOf(weight) },
      { name: "rowmax", dtype: "f32", shape: kind === "top" ? [H, N] : [N], bytes: bytesOf(rowmax) },
    ] };
  };
  const chunk = (key: string) => {
    const [side, rest] = key.split("/") as [CompareSide, string];
    if (rest === undefined) return { key, error: "a comparison's keys carry a side" };
    const c = side === "diff" ? diffChunk(rest) : (side === "a" ? fa : fb).chunk(rest);
    return { ...c, key };
  };
  const ranking: [number, number][] = [];
  for (let l = 0; l < L; l++) for (let hd = 0; hd < H; hd++) ranking.push([L - 1 - l, H - 1 - hd]);
  const meta: Meta = {
    ...fa.meta,
    comparison: {
      a: fa.meta.sides.source!, b: { ...fa.meta.sides.source!, labels: fa.meta.sides.source!.labels.map((x, i) => (i === 2 ? "other" : x)) },
      alignment: Array.from({ length: N }, (_, i) => [i, i] as [number, number]),
      divergence: { self: Array.from({ length: L }, (_, l) => Array.from({ length: H }, (_, hd) => (l * H + hd) / 100)) },
      ranking: { self: ranking },
    },
  };
  const f = { ...fa, meta, chunk, message: (keys: string[]) => {
    const buffers: Uint8Array[] = [];
    const chunks = keys.map((key) => {
      const c = chunk(key);
      if (c.error) return { key, error: c.error };
      return { key, arrays: (c.arrays ?? []).map((a) => { buffers.push(a.bytes); return { name: a.name, dtype: a.dtype, shape: a.shape, buffer: buffers.length - 1 }; }) };
    });
    return { content: { type: "chunks" as const, chunks }, buffers };
  } };
  return { fa, fb, f, meta };
}

describe("a comparison's side data", () => {
  it("asks for the side's keys and answers under the view's own", async () => {
    const { f } = comparison();
    const ctx = viewContext(f);
    const b = sideData(ctx.data, "b");
    const got = await b.request(["top:self:1"]);
    expect(ctx.requested.flat()).toEqual(["b/top:self:1"]);
    expect([...got.keys()]).toEqual(["top:self:1"]);
    expect(got.get("top:self:1")!.key).toBe("b/top:self:1");
    expect(b.peek("top:self:1")).toBe(got.get("top:self:1"));
    expect(sideData(ctx.data, "a").peek("top:self:1")).toBeUndefined();
  });
});

describe("the app on a comparison", () => {
  const canvasOps = (root: HTMLElement): string => {
    const c = root.querySelector<HTMLCanvasElement>('[data-testid="head-canvas"]')!;
    return JSON.stringify((c.getContext("2d") as unknown as { ops: unknown[] }).ops);
  };

  it("switches A / B / A − B: the pressed side's chunks, drawn again", async () => {
    const { f, meta } = comparison();
    const ctx = viewContext(f, { compare_side: "diff" });
    const cleanup = renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
    const ready = (): boolean => ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')?.dataset.ready === "true";
    await until(ready);
    expect(ctx.requested.flat()).toContain("diff/top:self:0");
    expect(ctx.root.querySelector('[data-testid="diff-legend"]')).not.toBeNull();
    const pressed = (): string[] => [...ctx.root.querySelectorAll<HTMLElement>('[data-testid="compare-toggle"] [aria-pressed="true"]')].map((b) => b.dataset.side!);
    expect(pressed()).toEqual(["diff"]);
    const drawn: Record<string, string> = { diff: canvasOps(ctx.root) };
    for (const side of ["a", "b"] as const) {
      ctx.root.querySelector<HTMLButtonElement>(`[data-testid="compare-${side}"]`)!.click();
      expect(ctx.store.get().compare_side).toBe(side);
      expect(pressed()).toEqual([side]);
      await until(ready);
      expect(ctx.requested.flat()).toContain(`${side}/top:self:0`);
      expect(ctx.root.querySelector('[data-testid="diff-legend"]')).toBeNull();
      drawn[side] = canvasOps(ctx.root);
    }
    expect(new Set(Object.values(drawn)).size).toBe(3);
    expect(ctx.root.querySelector('[data-testid="compare-summary"] mark')!.textContent).toBe("tok2");
    cleanup();
  });

  it("has no switch for a single trace, whose compare_side stays null", async () => {
    const f = makeFixture();
    const ctx = viewContext(f);
    renderApp({ meta: f.meta, store: ctx.store, data: ctx.data, el: ctx.root });
    await until(() => ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')?.dataset.ready === "true");
    expect(ctx.root.querySelector('[data-testid="compare-toggle"]')).toBeNull();
    expect(ctx.store.get().compare_side).toBeNull();
    expect(ctx.requested.flat().every((k) => !k.includes("/"))).toBe(true);
  });

  it("ranks the model view's cells by divergence and tells each cell's", async () => {
    const { f, meta } = comparison();
    const order = rankingOrder(meta, "self")!;
    expect(order[0]).toBe(f.L * f.H - 1); // the fixture ranks the last cell first
    expect(divergenceNote(meta, "self", 1, 2)).toBe(" · JS divergence 0.05 nats (rank 1 of 6)");
    expect(cellAt({ cell: 20, width: 200, height: 100, band: 0 }, 35, 17, f.L, f.H, order)).toEqual({ l: 1, h: 2 });
    const ctx = viewContext(f, { compare_side: "diff", view: "model", grid_order: "divergence" });
    renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
    await until(() => ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')?.dataset.ready === "true");
    expect(ctx.requested.flat()).toContain("diff/thumbs:self");
    expect(ctx.root.querySelector<HTMLSelectElement>('[data-testid="grid-order"]')!.value).toBe("divergence");
  });

  it("opens the neuron view of A − B on the default query and says so to the store", async () => {
    for (const [causal, expected] of [[true, 4], [false, 1], [undefined, 1]] as const) {
      const { f, meta } = comparison(); // [CLS] tok1 .. tok4 [PAD]
      meta.streams.self = { ...meta.streams.self!, causal };
      const ctx = viewContext(f, { compare_side: "diff", view: "neuron" });
      const cleanup = renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
      const view = (): HTMLElement | null => ctx.root.querySelector<HTMLElement>('[data-testid="compare-neuron-view"]');
      await until(() => view()?.dataset.ready === "true");
      expect(ctx.root.querySelector('[data-testid="neuron-info"]')!.textContent).toContain(`(#${expected})`);
      expect(ctx.store.get().query).toBe(expected);
      cleanup();
    }
  });

  it("sets A's and B's q·k side by side in the neuron view of A − B", async () => {
    const { f, fa, fb, meta } = comparison();
    const ctx = viewContext(f, { compare_side: "diff", view: "neuron", query: 2 });
    renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
    const view = (): HTMLElement | null => ctx.root.querySelector<HTMLElement>('[data-testid="compare-neuron-view"]');
    await until(() => view()?.dataset.ready === "true");
    expect(ctx.requested.flat()).toEqual(expect.arrayContaining(["a/qk:self:0:0", "b/qk:self:0:0", "a/attn:self:0:0", "b/attn:self:0:0"]));
    const qa = await ctx.data.request(["a/qk:self:0:0", "b/qk:self:0:0"]);
    const r = sideBySide(qa.get("a/qk:self:0:0")!, qa.get("b/qk:self:0:0")!, 2, null);
    // Exact q·k of each input, and the key whose weight changed most is shown by default.
    const dot = (q: Float32Array, k: Float32Array, i: number, j: number): number => {
      let s = 0;
      for (let d = 0; d < fa.D; d++) s += (q[i * fa.D + d] as number) * (k[j * fa.D + d] as number);
      return s;
    };
    expect(r.a.qk[3]).toBeCloseTo(dot(fa.q[0]![0]!, fa.k[0]![0]!, 2, 3), 5);
    expect(r.b.qk[3]).toBeCloseTo(dot(fb.q[0]![0]!, fb.k[0]![0]!, 2, 3), 5);
    const change = Array.from({ length: r.a.K }, (_, j) => Math.abs((r.a.weight[j] as number) - (r.b.weight[j] as number)));
    expect(r.key).toBe(change.indexOf(Math.max(...change)));
    expect(view()!.dataset.shownKey).toBe(String(r.key));
    expect(ctx.root.querySelector('[data-testid="compare-strip-a"]')).not.toBeNull();
    expect(ctx.root.querySelector('[data-testid="compare-strip-b"]')).not.toBeNull();
    // A click on a key selects it.
    ctx.root.querySelector<HTMLElement>('[data-key="1"]')!.click();
    expect(ctx.store.get().key).toBe(1);
    await until(() => view()?.dataset.shownKey === "1");
    expect(sideBySide(qa.get("a/qk:self:0:0")!, qa.get("b/qk:self:0:0")!, 2, 1).key).toBe(1);
  });
});
