// Save what a view shows: PNG from a composed canvas, SVG generated from the same state.
import { h } from "./views/common";

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

export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c] as string);
}

export function svgDocument(width: number, height: number, bg: string, body: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">\n` +
    `<rect width="100%" height="100%" fill="${bg}"/>\n${body.join("\n")}\n</svg>\n`;
}

export interface Exporter {
  name: () => string;
  png: () => HTMLCanvasElement | null;
  svg: () => string | null;
}

/** PNG and SVG buttons for a view's toolbar; returns the cleanup. */
export function saveButtons(bar: HTMLElement, ex: Exporter): () => void {
  const png = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as PNG", "data-testid": "save-png" });
  png.textContent = "PNG";
  const svg = h("button", "attnscope-btn", { type: "button", "aria-label": "Save as SVG", "data-testid": "save-svg" });
  svg.textContent = "SVG";
  const onPng = (): void => {
    const c = ex.png();
    if (c) canvasBlob(c).then((b) => download(b, `${ex.name()}.png`)).catch(() => undefined);
  };
  const onSvg = (): void => {
    const s = ex.svg();
    if (s) download(new Blob([s], { type: "image/svg+xml" }), `${ex.name()}.svg`);
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
