// Several heads on the log scale: line opacity faded so the panel keeps below a
// target ink (issue 26), a single head and a focused query left as they were.
import { collectLines, emptyLines, headLayout, MAX_LINES, type HeadLayout, type Lines, type TopRows } from "../../js/views/head/head_lines";
import { INK_TARGET, inkCover, lineAlpha, logFade, MAX_FADE, scaleLegend, stepLengths } from "../../js/views/head/head_scale";
import { lineWidth } from "../../js/views/head/head_lines";

const H = 12, N = 48;
/**
 * Rows as MiniLM's look on the log scale: one strong key (full strength) and
 * the others between 0.16 and 0.78, for every `every`-th key (0 elsewhere).
 */
function denseTop(every = 1): TopRows {
  const weight = new Uint8Array(H * N * N);
  for (let hd = 0; hd < H; hd++) for (let q = 0; q < N; q++) for (let k = 0; k < N; k += every) {
    weight[(hd * N + q) * N + k] = k === (q + hd) % N ? 255 : 40 + ((hd * 7 + q * 3 + k * 5) % 160);
  }
  return { index: null, weight, rowmax: new Float32Array(H * N).fill(1), queries: N, slots: N };
}
const layout: HeadLayout = headLayout(N, N, 960, 0);
const heads = Array.from({ length: H }, (_, i) => i);
const linesOf = (shown: number[], query = -1, every = 1): Lines =>
  collectLines(emptyLines(), denseTop(every), layout, { heads: shown, query, key: -1, pairFilter: "all", segQ: null, segK: null, cap: MAX_LINES });
const cover = (l: Lines, fade: number): number =>
  inkCover(stepLengths(l, layout), lineWidth(l.n), (layout.x1 - layout.x0) * layout.height, fade);

describe("line opacity on the log scale", () => {
  it("is the strength itself without a fade, and a full line stays full under any fade", () => {
    expect([0, 0.25, 0.5, 1].map((s) => lineAlpha(s, 1))).toEqual([0, 0.25, 0.5, 1]);
    expect(lineAlpha(1, MAX_FADE)).toBe(1);
    expect(lineAlpha(1.2, 3)).toBe(1);
  });

  it("fades weak lines much more than strong ones, so the strongest stand out", () => {
    const fade = 6;
    expect(lineAlpha(0.95, fade)).toBeGreaterThan(0.7);
    expect(lineAlpha(0.45, fade) / lineAlpha(0.95, fade)).toBeLessThan(0.02); // 0.45/0.95 without the fade
  });

  it("fades twelve dense heads until their ink is under the target (it was far over)", () => {
    const l = linesOf(heads);
    expect(l.n).toBeGreaterThan(MAX_LINES * 0.9); // the strongest 3000, as drawn
    expect(cover(l, 1)).toBeGreaterThan(3 * INK_TARGET);
    const fade = logFade(true, H, l, layout);
    expect(fade).toBeGreaterThan(1);
    expect(fade).toBeLessThan(MAX_FADE);
    expect(cover(l, fade)).toBeLessThanOrEqual(INK_TARGET);
    expect(cover(l, fade)).toBeGreaterThan(INK_TARGET * 0.9); // the smallest fade that does: no more fading than needed
    expect(cover(l, fade - 0.2)).toBeGreaterThan(INK_TARGET);
  });

  it("leaves one head, the weight scale and a focused query's few lines as they were", () => {
    const dense = linesOf(heads);
    expect(logFade(false, H, dense, layout)).toBe(1); // log switch off
    expect(logFade(true, 1, linesOf([3]), layout)).toBe(1);
    const focused = linesOf(heads, 20, 6); // one query, 8 keys in each head
    expect(focused.n).toBe(H * 8);
    expect(cover(focused, 1)).toBeLessThan(INK_TARGET);
    expect(logFade(true, H, focused, layout)).toBe(1);
    expect(logFade(true, H, emptyLines(), layout)).toBe(1);
  });
});

describe("the log scale's legend", () => {
  it("says the range, and the fade when several heads share the panel", () => {
    expect(scaleLegend("weight", 0.4, null, 1)).toBe("lines and key bars on a log scale: 0.001 (clear) … 1 (full)");
    expect(scaleLegend("row", null, null, 1)).toContain("then ÷ each row's largest");
    const faded = scaleLegend("weight", null, null, 6.54);
    expect(faded).toContain("0.001 (clear) … 1 (full)");
    expect(faded).toContain("opacity = strength^6.5");
    expect(scaleLegend("weight", 0.4)).toBe("lines and key bars: the weight (full = 1)"); // log off: as before
  });
});
