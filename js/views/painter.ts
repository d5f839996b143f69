// One drawing vocabulary for PNG (canvas) and SVG (text) export, so a view composes its picture once.
import { xmlEscape } from "../export_image";

export interface Painter {
  rect(x: number, y: number, w: number, h: number, fill: string): void;
  /** Text vertically centred on y. */
  text(x: number, y: number, s: string, fill: string, align?: "left" | "right" | "center"): void;
}

export function canvasPainter(c: CanvasRenderingContext2D, font: string): Painter {
  c.font = font;
  c.textBaseline = "middle";
  return {
    rect(x, y, w, h, fill) { c.fillStyle = fill; c.fillRect(x, y, w, h); },
    text(x, y, s, fill, align = "left") { c.fillStyle = fill; c.textAlign = align; c.fillText(s, x, y); },
  };
}

export function svgPainter(parts: string[]): Painter {
  const anchor = { left: "start", right: "end", center: "middle" } as const;
  return {
    rect(x, y, w, h, fill) { parts.push(`<rect x="${x}" y="${y}" width="${w.toFixed(1)}" height="${h}" fill="${fill}"/>`); },
    text(x, y, s, fill, align = "left") {
      parts.push(`<text x="${x}" y="${y.toFixed(1)}" font-family="sans-serif" font-size="11" dominant-baseline="middle" text-anchor="${anchor[align]}" fill="${fill}">${xmlEscape(s)}</text>`);
    },
  };
}
