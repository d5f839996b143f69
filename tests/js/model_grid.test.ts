import { readTheme } from "../../js/colors";
import { rowsToOwnMax, thumbLut, thumbValue } from "../../js/views/model/model_grid";
import { defaultLineScale, scaleLegend } from "../../js/views/head/head_scale";

describe("log-encoded thumbnails (protocol.md, thumbs:)", () => {
  it("decode as Python encodes them: 0 is no weight, 1 is 10^-6 of the peak, 255 the peak", () => {
    // encode.arrays.scale_thumbnails([0, 1e-9, 0.001, 0.1, 1]) == [0, 1, 128, 213, 255]
    expect(thumbValue(0)).toBe(0);
    expect(thumbValue(1)).toBeCloseTo(1e-6, 12);
    expect(Math.log10(thumbValue(128))).toBeCloseTo(-3, 1);
    expect(Math.log10(thumbValue(213))).toBeCloseTo(-1, 1);
    expect(thumbValue(255)).toBe(1);
  });

  it("a row of a cell scaled to its own largest: a shift of its bytes, zeros kept", () => {
    const rows = rowsToOwnMax(Uint8Array.from([255, 100, 0, 0, 40, 30, 0, 0, 0]), 3);
    expect([...rows]).toEqual([255, 100, 0, 0, 255, 245, 0, 0, 0]);
  });

  it("both scales colour a faint byte apart from the background and from the peak", () => {
    document.body.innerHTML = '<div id="x"></div>';
    const t = readTheme(document.getElementById("x")!, false);
    for (const scale of ["log", "linear"] as const) {
      const lut = thumbLut(t, scale);
      const rgb = (b: number): number[] => [...lut.slice(b * 4, b * 4 + 3)];
      expect(rgb(0)).toEqual(t.bg);
      expect(rgb(255)).not.toEqual(rgb(0));
      if (scale === "log") expect(rgb(1)).not.toEqual(rgb(0)); // 10^-6 still shows
    }
  });
});

describe("the head view's opening scale", () => {
  it("is the row scale past 256 keys, and the legend says why", () => {
    expect(defaultLineScale(256)).toBe("weight");
    expect(defaultLineScale(4002)).toBe("row");
    expect(scaleLegend("row", null, 4002)).toContain("chosen for 4002 tokens");
    expect(scaleLegend("row", null, null)).not.toContain("chosen");
  });
});

describe("the find box's word search", () => {
  it("finds a word split into pieces, case-insensitive, as the span of its pieces", async () => {
    const { findMatch, findSpans } = await import("../../js/views/head/head_search");
    // MiniLM: "The warranty covers the Warranty period" → the warrant ##y covers the warrant ##y period
    const side = { labels: ["[CLS]", "the", "warrant", "·y", "covers", "the", "warrant", "·y", "period", "[SEP]"], continues: [false, false, false, true, false, false, false, true, false, false] };
    expect(findSpans(side, "warranty")).toEqual([{ from: 2, to: 3 }, { from: 6, to: 7 }]);
    expect(findSpans(side, "WARRANTY")).toHaveLength(2);
    expect(findSpans(side, "warranty", "tokens")).toEqual([]); // no one token holds it
    expect(findSpans(side, "warrant", "tokens")).toEqual([{ from: 2, to: 2 }, { from: 6, to: 6 }]);
    expect(findSpans(side, "  the   warranty covers ")).toEqual([{ from: 1, to: 4 }]); // a phrase
    expect(findSpans(side, "y co")).toEqual([{ from: 3, to: 4 }]); // across a word's end
    expect(findMatch(side, "warranty", 2)).toEqual({ span: { from: 6, to: 7 }, rank: 2, count: 2 });
    expect(findMatch(side, "warranty", 6)).toEqual({ span: { from: 2, to: 3 }, rank: 1, count: 2 }); // wraps
    expect(findMatch(side, "guarantee", 0)).toEqual({ span: { from: -1, to: -1 }, rank: 0, count: 0 });
  });

  it("reads a byte-level BPE's words (a space-led label starts a word)", async () => {
    const { findSpans } = await import("../../js/views/head/head_search");
    const side = { labels: ["The", " warr", "·anty", " is", " void"], continues: [false, false, true, false, false] };
    expect(findSpans(side, "warranty is void")).toEqual([{ from: 1, to: 4 }]);
  });
});

describe("the head view's token search", () => {
  it("finds the next match after the locked row, wraps, and steps back", async () => {
    const { findToken } = await import("../../js/views/head/head_search");
    const labels = ["The", "needle", "in", "a", "hay", "Needle", "stack"];
    expect(findToken(labels, "needle", -1)).toEqual({ row: 1, rank: 1, count: 2 });
    expect(findToken(labels, "NEEDLE", 1)).toEqual({ row: 5, rank: 2, count: 2 });
    expect(findToken(labels, "needle", 5)).toEqual({ row: 1, rank: 1, count: 2 }); // wraps
    expect(findToken(labels, "needle", 5, -1)).toEqual({ row: 1, rank: 1, count: 2 });
    expect(findToken(labels, "needle", 1, -1)).toEqual({ row: 5, rank: 2, count: 2 });
    expect(findToken(labels, "zebra", 0)).toEqual({ row: -1, rank: 0, count: 0 });
    expect(findToken(labels, "  ", 0)).toBeNull();
  });
});
