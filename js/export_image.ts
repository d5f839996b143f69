// Save what a view shows: its Picture painted into a PNG and into an SVG by the
// same calls that paint it on the screen.
import { parseColor } from "./colors";
import { canvasPainter } from "./paint/canvas_painter";
import type { Painter, Picture } from "./paint/painter";
import { svgDocument, svgPainter } from "./paint/svg_painter";
import { h, sizeCanvas } from "./views/common";

/** PNGs at twice the CSS size: sharp on high-density screens and in print. */
const PNG_PIXEL_RATIO = 2;

export function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function canvasBlob(c: HTMLCanvasElement): Promise<Blob> {
  return new Promise((resolve, reject) => {
    if (typeof c.toBlob !== "function") { reject(new Error("canvas.toBlob unavailable")); return; }
    c.toBlob((b) => (b ? resolve(b) : reject(new Error("could not encode PNG"))), "image/png");
  });
}

/** The picture on a new canvas (null where canvases have no 2D context). */
export function pictureCanvas(pic: Picture, pixelRatio = PNG_PIXEL_RATIO): HTMLCanvasElement | null {
  const out = document.createElement("canvas");
  const c = sizeCanvas(out, pic.width, pic.height, pixelRatio);
  if (!c) return null;
  const p = canvasPainter(c, pic.font, pixelRatio);
  p.rect(0, 0, pic.width, pic.height, pic.background);
  pic.paint(p);
  return out;
}

/** The picture as an SVG file. */
export function pictureSvg(pic: Picture): string {
  const parts: string[] = [];
  pic.paint(svgPainter(parts));
  return svgDocument(pic.width, pic.height, pic.background, pic.font, parts);
}

export interface Exporter {
  /** File name without extension. */
  name: () => string;
  /** What the view shows now; null when it shows nothing yet. */
  picture: () => Picture | null;
  /** What the picture is (model, layer, head(s), query, scale, ranking ...): lines above it in the file. */
  caption?: () => string[];
}

const CAPTION_LINE = 15, CAPTION_PAD = 8, CAPTION_CHAR = 6.5; // CSS px; a character's width, roughly

/** `p` with every y moved down by `dy` (the picture under a caption band). */
function shifted(p: Painter, dy: number): Painter {
  return {
    rect: (x, y, w, h, fill) => p.rect(x, y + dy, w, h, fill),
    strokeRect: (x, y, w, h, stroke) => p.strokeRect(x, y + dy, w, h, stroke),
    text: (x, y, str, fill, align, baseline) => p.text(x, y + dy, str, fill, align, baseline),
    segments: (stroke, each) => p.segments(stroke, (segment) => each((x0, y0, x1, y1) => segment(x0, y0 + dy, x1, y1 + dy))),
    tiles: (list) => p.tiles(list.map((t) => ({ ...t, y: t.y + dy, fill: t.fill.bind(t) }))),
  };
}

/**
 * `text`'s words: split at spaces, except inside an isolated label (FSI/LRI/RLI … PDI), which
 * stays one word so that no line of a caption opens a label another line closes.
 */
function captionWords(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let depth = 0;
  for (const ch of text) {
    if (ch === "\u2066" || ch === "\u2067" || ch === "\u2068") depth++;
    else if (ch === "\u2069" && depth > 0) depth--;
    if (ch === " " && depth === 0) { words.push(word); word = ""; } else word += ch;
  }
  words.push(word);
  return words;
}

/** `text` broken at spaces into lines of at most `chars` characters (a longer word stays whole). */
export function wrapCaption(text: string, chars: number): string[] {
  const out: string[] = [];
  let line = "";
  for (const word of captionWords(text)) {
    if (line && line.length + 1 + word.length > chars) { out.push(line); line = word; } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}

/** The picture with `lines` written in a band above it, in ink that reads on its background. */
export function captioned(pic: Picture, lines: readonly string[]): Picture {
  if (!lines.length) return pic;
  const width = Math.max(pic.width, 320);
  const chars = Math.max(20, Math.floor((width - 2 * CAPTION_PAD) / CAPTION_CHAR));
  const wrapped = lines.flatMap((l) => wrapCaption(l, chars));
  const band = 2 * CAPTION_PAD + wrapped.length * CAPTION_LINE;
  const [r, g, b] = parseColor(pic.background, [255, 255, 255]);
  const ink = 0.299 * r + 0.587 * g + 0.114 * b < 128 ? "#e6e6e6" : "#1e1e1e";
  return {
    ...pic,
    width,
    height: pic.height + band,
    paint: (p) => {
      wrapped.forEach((l, i) => p.text(CAPTION_PAD, CAPTION_PAD + i * CAPTION_LINE, l, ink, "left", "top"));
      pic.paint(shifted(p, band));
    },
  };
}

/** What the exporter saves now: its picture under its caption, or null. */
export function exportPicture(ex: Exporter): Picture | null {
  const pic = ex.picture();
  return pic && ex.caption ? captioned(pic, ex.caption()) : pic;
}

/** PNG and SVG buttons for a view's toolbar; returns the cleanup. */
export function saveButtons(bar: HTMLElement, ex: Exporter): () => void {
  const png = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as PNG", "data-testid": "save-png" });
  png.textContent = "PNG";
  const svg = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as SVG", "data-testid": "save-svg" });
  svg.textContent = "SVG";
  const onPng = (): void => {
    const pic = exportPicture(ex);
    const c = pic && pictureCanvas(pic);
    if (c) canvasBlob(c).then((b) => download(b, `${ex.name()}.png`)).catch(() => undefined);
  };
  const onSvg = (): void => {
    const pic = exportPicture(ex);
    if (pic) download(new Blob([pictureSvg(pic)], { type: "image/svg+xml" }), `${ex.name()}.svg`);
  };
  png.addEventListener("click", onPng);
  svg.addEventListener("click", onSvg);
  const group = h("span", "attnscope-save", { role: "group", "aria-label": "Save image" });
  group.append(png, svg);
  bar.append(group);
  return () => {
    png.removeEventListener("click", onPng);
    svg.removeEventListener("click", onSvg);
    group.remove();
  };
}
