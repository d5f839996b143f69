// Save what a view shows: its Picture painted into a PNG and into an SVG by the
// same calls that paint it on the screen.
import { canvasPainter } from "./paint/canvas_painter";
import type { Picture } from "./paint/painter";
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
}

/** PNG and SVG buttons for a view's toolbar; returns the cleanup. */
export function saveButtons(bar: HTMLElement, ex: Exporter): () => void {
  const png = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as PNG", "data-testid": "save-png" });
  png.textContent = "PNG";
  const svg = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as SVG", "data-testid": "save-svg" });
  svg.textContent = "SVG";
  const onPng = (): void => {
    const pic = ex.picture();
    const c = pic && pictureCanvas(pic);
    if (c) canvasBlob(c).then((b) => download(b, `${ex.name()}.png`)).catch(() => undefined);
  };
  const onSvg = (): void => {
    const pic = ex.picture();
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
