// The Painter as SVG text: the image export that stays editable.
import type { Align, Baseline, Painter, Stroke } from "./painter";

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
// What XML 1.0 cannot hold at all, not even as a character reference: C0 controls other than
// tab, newline and carriage return; U+FFFE and U+FFFF; surrogates that are not half of a pair.
const NOT_XML = /[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `s` as XML text or attribute value: markup characters escaped, and the characters XML
 * forbids replaced so the file stays well-formed: a C0 control by its Control Pictures
 * symbol (NUL as ␀, ESC as ␛), anything else by U+FFFD.
 */
export function xmlEscape(s: string): string {
  return s
    .replace(/[&<>"']/g, (c) => ENTITIES[c] as string)
    .replace(NOT_XML, (c) => (c.charCodeAt(0) < 0x20 ? String.fromCharCode(0x2400 + c.charCodeAt(0)) : "\ufffd"));
}

/** A coordinate to two decimals at most: exact enough, and short. */
const num = (v: number): string => String(Math.round(v * 100) / 100);

const ANCHOR: Record<Align, string> = { left: "start", right: "end", center: "middle" };
// The SVG baselines nearest to the canvas's textBaseline of the same name.
const BASELINE: Record<Baseline, string> = { middle: "middle", top: "hanging", bottom: "text-after-edge" };

const strokeAttrs = (s: Stroke): string =>
  `stroke="${xmlEscape(s.color)}" stroke-width="${num(s.width)}"${s.alpha !== undefined && s.alpha !== 1 ? ` stroke-opacity="${num(s.alpha)}"` : ""}`;

/** Append each painted element to `parts`, one SVG element (or group) a call. */
export function svgPainter(parts: string[]): Painter {
  let scratch: HTMLCanvasElement | null = null;
  return {
    rect(x, y, w, h, fill) {
      parts.push(`<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="${xmlEscape(fill)}"/>`);
    },
    strokeRect(x, y, w, h, stroke) {
      parts.push(`<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="none" ${strokeAttrs(stroke)}/>`);
    },
    text(x, y, s, fill, align = "left", baseline = "middle") {
      parts.push(`<text x="${num(x)}" y="${num(y)}" dominant-baseline="${BASELINE[baseline]}" text-anchor="${ANCHOR[align]}" fill="${xmlEscape(fill)}">${xmlEscape(s)}</text>`);
    },
    segments(stroke, each) {
      // A group per stroke, a <line> per segment: each line stays its own element in an editor.
      const lines: string[] = [];
      each((x0, y0, x1, y1) => { lines.push(`<line x1="${num(x0)}" y1="${num(y0)}" x2="${num(x1)}" y2="${num(y1)}"/>`); });
      if (lines.length) parts.push(`<g fill="none" ${strokeAttrs(stroke)}>`, ...lines, "</g>");
    },
    tiles(list) {
      // Raster data by nature: each tile embedded as a PNG at one pixel per CSS pixel.
      scratch ??= document.createElement("canvas");
      for (const t of list) {
        const w = Math.max(1, Math.round(t.w)), h = Math.max(1, Math.round(t.h));
        scratch.width = w;
        scratch.height = h;
        const c = scratch.getContext("2d");
        if (!c) return;
        const img = c.createImageData(w, h);
        t.fill(img.data, w, 0, 0, w, h);
        c.putImageData(img, 0, 0);
        const title = t.title ? `<title>${xmlEscape(t.title)}</title>` : "";
        parts.push(`<image x="${num(t.x)}" y="${num(t.y)}" width="${num(t.w)}" height="${num(t.h)}" href="${xmlEscape(scratch.toDataURL("image/png"))}">${title}</image>`);
      }
    },
  };
}

/** A whole SVG file: the background, then `parts`, with the picture's font for every text. */
export function svgDocument(width: number, height: number, background: string, font: string, parts: readonly string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${num(width)}" height="${num(height)}" viewBox="0 0 ${num(width)} ${num(height)}">\n` +
    `<style>text { font: ${xmlEscape(font)}; }</style>\n` +
    `<rect width="100%" height="100%" fill="${xmlEscape(background)}"/>\n${parts.join("\n")}\n</svg>\n`;
}
