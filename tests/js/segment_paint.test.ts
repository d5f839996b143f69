// The head view's segments picture (js/views/head/segment_paint.ts): what the screen, the PNG and
// the SVG paint, and the caption an exported segments picture carries.
import { pictureSvg } from "../../js/export_image";
import type { Painter, Stroke } from "../../js/paint/painter";
import type { ThemeColors } from "../../js/colors";
import type { SegmentsMeta } from "../../js/wire/types";
import { segmentLayout, segmentY } from "../../js/views/head/segment_geometry";
import { paintSegmentLabels, paintSegmentLines, segmentCaption, segmentsWord } from "../../js/views/head/segment_paint";

const theme: ThemeColors = {
  dark: false, fg: [30, 30, 30], bg: [255, 255, 255], muted: [120, 120, 120], accent: [0, 100, 200],
  neg: [200, 0, 0], pos: [0, 0, 200], grid: [220, 220, 220], font: "12px sans-serif",
};

const bare = (t: string): string => t.replace(/[\u2066-\u2069]/g, "");

/** A painter that writes down each call. */
function recorder(): { p: Painter; strokes: { stroke: Stroke; lines: number[][] }[]; rects: number[][]; texts: string[] } {
  const strokes: { stroke: Stroke; lines: number[][] }[] = [], rects: number[][] = [], texts: string[] = [];
  const p: Painter = {
    rect: (x, y, w, h) => { rects.push([x, y, w, h]); },
    strokeRect: () => undefined,
    text: (_x, _y, s) => { texts.push(s); },
    segments: (stroke, each) => { const lines: number[][] = []; each((...a) => lines.push(a)); strokes.push({ stroke, lines }); },
    tiles: () => undefined,
  };
  return { p, strokes, rects, texts };
}

// Two heads, three segments: mass[head][a][b].
const mass = new Float32Array([
  1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5,
  1, 0, 0, 0.9, 0.1, 0, 0.001, 0.099, 0.9,
]);
const images: SegmentsMeta = {
  stream: "self", by: "images", edges: [0, 1, 17, 18], labels: ["Look", "img0 (4×4 patches)", "at"], titles: ["", "", ""],
};

describe("paintSegmentLines", () => {
  it("draws one line per head and pair over 1/255, faint first, in the head's colour and at its mass", () => {
    const r = recorder(), g = segmentLayout(3, 600);
    const out = paintSegmentLines(r.p, g, mass, 3, [0, 1], null, ["#ff0000", "#00ff00"], theme);
    // head 0: 6 non-zero pairs; head 1: 5 (0.001 is under a byte step)
    expect(out.lines).toBe(11);
    expect(r.strokes).toHaveLength(11);
    const alphas = r.strokes.map((s) => s.stroke.alpha ?? 1);
    expect(alphas).toEqual([...alphas].sort((a, b) => a - b));
    const strongest = r.strokes[r.strokes.length - 1]!;
    expect(strongest.stroke.alpha).toBe(1);
    expect(strongest.lines[0]).toEqual([g.x0, segmentY(0), g.x1, segmentY(0)]);
    expect(out.bars).toBeNull();
    expect(r.rects).toEqual([]);
  });

  it("keeps the focused query segment's lines and draws its key bars", () => {
    const r = recorder(), g = segmentLayout(3, 600);
    const out = paintSegmentLines(r.p, g, mass, 3, [1], { side: "query", i: 2 }, ["#f00", "#0f0"], theme);
    expect(out.lines).toBe(2);
    expect(Array.from(out.bars ?? [])).toEqual([Math.fround(0.001), Math.fround(0.099), Math.fround(0.9)]);
    // A bar per key with some mass, as wide as its share of the column.
    expect(r.rects.map((b) => b[2]! / g.colW)).toEqual(Array.from(out.bars!).map((w) => expect.closeTo(w, 6)));
  });
});

describe("the segments picture", () => {
  it("draws every label on both sides; the SVG carries them", () => {
    const g = segmentLayout(3, 600);
    const r = recorder();
    paintSegmentLabels(r.p, g, images.labels, null, theme);
    // Labels are bidi-isolated, as the head view's token labels are.
    expect(r.texts.map(bare)).toEqual(["Look", "Look", "img0 (4×4 patches)", "img0 (4×4 patches)", "at", "at"]);
    const svg = pictureSvg({ width: 600, height: g.height, background: "#fff", font: theme.font, paint: (p) => {
      paintSegmentLines(p, g, mass, 3, [0], null, ["#ff0000"], theme);
      paintSegmentLabels(p, g, images.labels, null, theme);
    } });
    expect(svg).toContain("img0 (4×4 patches)");
    expect((svg.match(/<line|<path/g) ?? []).length).toBeGreaterThan(0);
  });
});

describe("segmentCaption", () => {
  it("says model, layer, heads and what the rows are", () => {
    const sentences: SegmentsMeta = { ...images, by: "sentences", labels: ["A.", "B.", "C."] };
    const [first, second] = segmentCaption("MiniLM · 23 tokens", 1, [0, 3], 12, sentences, null);
    expect(first).toBe("\u2068MiniLM\u2069 · layer 1 · heads 0, 3 · 3 rows: sentences");
    expect(second).toContain("a line's opacity");
    expect(segmentCaption("m", 0, [0, 1], 2, { ...sentences, by: "turns" }, "B.")[0]).toBe("\u2068m\u2069 · layer 0 · all 2 heads · 3 rows: turns · focus “\u2068B.\u2069”");
    expect(segmentCaption("m", 0, [1], 2, images, null)[0]).toBe("\u2068m\u2069 · layer 0 · head 1 · 3 rows: images collapsed (each image one row)");
    expect(segmentsWord("positions")).toBe("segments");
  });
});
