// One Painter vocabulary, two painters: what a picture paints on a canvas it also writes into an SVG.
import { pictureCanvas, pictureSvg } from "../../js/export_image";
import { canvasPainter } from "../../js/paint/canvas_painter";
import type { Picture, Tile } from "../../js/paint/painter";
import { svgPainter, xmlEscape } from "../../js/paint/svg_painter";
import { ctxOf, installCanvas } from "./helpers/canvas";

beforeAll(installCanvas);

const context = (): CanvasRenderingContext2D => document.createElement("canvas").getContext("2d") as CanvasRenderingContext2D;
const tile = (x: number, y: number, seen: number[][], title?: string): Tile =>
  ({ x, y, w: 10, h: 5, title, fill: (_px, stride, ox, oy, w, h) => { seen.push([stride, ox, oy, w, h]); } });

const picture: Picture = {
  width: 120, height: 40, background: "#ffffff", font: "11px sans-serif",
  paint(p) {
    p.rect(0, 0, 10, 10, "#ff0000");
    p.strokeRect(1, 1, 8, 8, { color: "#000000", width: 2 });
    p.text(5, 20, "a<b", "#333333", "right");
    p.segments({ color: "#0072B2", width: 1.5, alpha: 0.25 }, (seg) => { seg(0, 0, 100, 30); seg(0, 10, 100, 5); });
    p.tiles([tile(20, 0, []), tile(30, 0, [])]);
  },
};

describe("canvas painter", () => {
  it("puts all tiles in one image at device pixels (putImageData ignores the canvas transform)", () => {
    const c = context();
    const seen: number[][] = [];
    canvasPainter(c, "11px sans-serif", 2).tiles([tile(3, 4, seen), tile(15, 4, seen)]);
    const puts = ctxOf(c.canvas).ops.filter((o) => o.name === "putImageData");
    expect(puts.map((o) => o.args.slice(1))).toEqual([[6, 8]]);
    expect(seen).toEqual([[44, 0, 0, 20, 10], [44, 24, 0, 20, 10]]);
  });

  it("strokes a whole set of segments as one path", () => {
    const c = context();
    canvasPainter(c, "11px sans-serif").segments({ color: "#000", width: 1 }, (seg) => { seg(0, 0, 1, 1); seg(2, 2, 3, 3); });
    const rec = ctxOf(c.canvas);
    expect([rec.count("beginPath"), rec.count("lineTo"), rec.count("stroke")]).toEqual([1, 2, 1]);
  });
});

describe("svg painter", () => {
  it("escapes text and gives tiles their titles", () => {
    const parts: string[] = [];
    const p = svgPainter(parts);
    p.text(0, 0, `<img src="x">&`, "#000");
    p.tiles([tile(0, 0, [], "layer 1 & head 2")]);
    expect(parts[0]).toContain(`>${xmlEscape('<img src="x">&')}</text>`);
    expect(parts[1]).toMatch(/^<image [^>]*href="data:image\/png[^"]*"><title>layer 1 &amp; head 2<\/title><\/image>$/);
  });
});

describe("one picture, two painters", () => {
  it("draws on the canvas exactly the elements it writes into the SVG", () => {
    const svg = pictureSvg(picture);
    const canvas = pictureCanvas(picture)!;
    const rec = ctxOf(canvas);
    const count = (re: RegExp): number => svg.match(re)?.length ?? 0;
    expect(count(/<line /g)).toBe(rec.count("lineTo"));
    expect(count(/<text /g)).toBe(rec.count("fillText"));
    expect(count(/<rect [^>]*fill="none"/g)).toBe(rec.count("strokeRect"));
    // Filled rects: the background and the red square, on both.
    expect(count(/<rect (?![^>]*fill="none")/g)).toBe(rec.count("fillRect"));
    expect(count(/<image /g)).toBe(2);
    expect(rec.count("putImageData")).toBe(1);
    expect(svg).toContain('stroke-opacity="0.25"');
    expect(svg).toContain("font: 11px sans-serif");
  });
});
