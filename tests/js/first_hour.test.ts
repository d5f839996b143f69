// The pieces behind issue 10's points that need no browser: word-piece marks,
// one number format, scales said in words, head offsets, export captions, axes.
import { rampPosition } from "../../js/colors";
import { HELP } from "../../js/help";
import { keySide, PIECE_MARK, querySide } from "../../js/tokens";
import type { Meta } from "../../js/wire/types";
import { fmt } from "../../js/views/common";
import { exportCaption, headOffsets, scaleLegend } from "../../js/views/head/head_scale";
import { axisTicks } from "../../js/views/model/model_preview";

const meta = (continues?: boolean[]): Meta => ({
  protocol: 1,
  sides: { source: { labels: ["[CLS]", "un", "bel", "ie", "bread", "bread"], kinds: ["special", "token", "token", "token", "token", "token"], continues }, target: null },
  streams: { self: { query_side: "source", key_side: "source", layers: [0], num_heads: 1, num_kv_heads: 1, q_len: 6, k_len: 6, head_dim: 2, thumb_rows: 6, thumb_cols: 6, top_k: 6 } },
} as unknown as Meta);

describe("word pieces", () => {
  it("mark the pieces that continue a word, so two 'bread' rows differ", () => {
    const m = meta([false, false, true, true, false, true]);
    const side = querySide(m, m.streams.self!);
    expect(side.labels).toEqual(["[CLS]", "un", `${PIECE_MARK}bel`, `${PIECE_MARK}ie`, "bread", `${PIECE_MARK}bread`]);
    expect(keySide(m, m.streams.self!).continues).toEqual([false, false, true, true, false, true]);
    expect(side.raw[2]).toBe("bel"); // the tooltip keeps the unmarked text
  });

  it("leave labels alone in pages written before the marks existed", () => {
    const m = meta(undefined);
    expect(querySide(m, m.streams.self!).labels[2]).toBe("bel");
  });
});

describe("numbers and scales", () => {
  it("one number format: three digits, or one exponent form below 0.01", () => {
    expect([0.279, 0.00239, 0.000098, 12.345, 1, 0].map(fmt)).toEqual(["0.279", "2.4e-3", "9.8e-5", "12.3", "1", "0"]);
  });

  it("the head view says what full strength means", () => {
    expect(scaleLegend("weight", 0.4)).toBe("lines and key bars: the weight (full = 1)");
    expect(scaleLegend("row", 0.0007)).toBe("lines and key bars: weight ÷ row max (row max = 7.0e-4)");
  });

  it("a log heat scale lifts the faintest byte off the background, keeps the top at 1", () => {
    expect(rampPosition(0, "log")).toBe(0);
    expect(rampPosition(1, "log")).toBeGreaterThan(rampPosition(1, "linear"));
    expect(rampPosition(255, "log")).toBeCloseTo(1);
  });
});

describe("heads told apart", () => {
  it("each shown head's lines run at their own small offset, centred, within a row", () => {
    for (const n of [12, 16]) {
      const off = headOffsets(Array.from({ length: n }, (_, i) => i), n);
      expect(new Set(off).size).toBe(n);
      expect(Math.abs(off.reduce((a, b) => a + b, 0))).toBeLessThan(1e-4);
      expect(Math.max(...off) - Math.min(...off)).toBeLessThanOrEqual(12);
    }
    expect([...headOffsets([3], 4)]).toEqual([0, 0, 0, 0]);
  });
});

describe("exports and axes", () => {
  it("an export's caption names the model, layer, heads and locked query", () => {
    const caption = exportCaption("all-MiniLM-L6-v2 · 6 layers × 12 heads", 2, [0, 5], 12, " fox");
    // The model's name and the label bidi-isolated.
    expect(caption).toBe("\u2068all-MiniLM-L6-v2\u2069 · layer 2 · heads 0, 5 · query “\u2068fox\u2069”");
    expect(exportCaption("m · 1 layer × 4 heads", 0, [0, 1, 2, 3], 4, null)).toBe("\u2068m\u2069 · layer 0 · all 4 heads");
  });

  it("the enlarged cell labels every token when they fit, every n-th when not", () => {
    expect(axisTicks(12, 200)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    const long = axisTicks(1500, 200);
    expect(long[0]).toBe(0);
    expect(long.length).toBeLessThanOrEqual(200 / 11 + 1);
  });

  it("the help lists click, double-click, shift-click and the keys", () => {
    const text = HELP.flatMap(([, lines]) => lines).join(" ");
    for (const word of ["Click", "Double-click", "Shift-click", "↑ / ↓", "[ / ]", "← / →", "Enter", "▲"]) expect(text).toContain(word);
  });
});
