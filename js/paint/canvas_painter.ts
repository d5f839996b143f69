// The Painter over a 2D canvas context: the screen and PNG export.
import type { Painter } from "./painter";

/** A pixel buffer kept between draws, so a redraw does not allocate one each time. */
export interface PixelScratch { image: ImageData | null }

/**
 * Paint on `c`, whose transform scales CSS pixels by `pixelRatio`. Tiles need
 * the ratio: putImageData ignores the transform, so they are written in device pixels.
 */
export function canvasPainter(c: CanvasRenderingContext2D, font: string, pixelRatio = 1, scratch: PixelScratch = { image: null }): Painter {
  // Setting a canvas font parses CSS: done once, and only by a painter that writes text.
  let fontSet = false;
  const device = (v: number): number => Math.round(v * pixelRatio);
  return {
    rect(x, y, w, h, fill) {
      c.fillStyle = fill;
      c.fillRect(x, y, w, h);
    },
    strokeRect(x, y, w, h, stroke) {
      c.strokeStyle = stroke.color;
      c.lineWidth = stroke.width;
      c.globalAlpha = stroke.alpha ?? 1;
      c.strokeRect(x, y, w, h);
      c.globalAlpha = 1;
    },
    text(x, y, s, fill, align = "left", baseline = "middle") {
      if (!fontSet) { c.font = font; fontSet = true; }
      c.fillStyle = fill;
      c.textAlign = align;
      c.textBaseline = baseline;
      c.fillText(s, x, y);
    },
    segments(stroke, each) {
      c.strokeStyle = stroke.color;
      c.lineWidth = stroke.width;
      c.globalAlpha = stroke.alpha ?? 1;
      c.beginPath();
      each((x0, y0, x1, y1) => {
        c.moveTo(x0, y0);
        c.lineTo(x1, y1);
      });
      c.stroke();
      c.globalAlpha = 1;
    },
    tiles(list) {
      if (!list.length) return;
      // One putImageData for all tiles: one image over their bounding box.
      let left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity;
      for (const t of list) {
        left = Math.min(left, device(t.x));
        top = Math.min(top, device(t.y));
        right = Math.max(right, device(t.x + t.w));
        bottom = Math.max(bottom, device(t.y + t.h));
      }
      const W = right - left, H = bottom - top;
      if (W <= 0 || H <= 0) return;
      let img = scratch.image;
      if (!img || img.width !== W || img.height !== H) img = scratch.image = c.createImageData(W, H);
      img.data.fill(0);
      for (const t of list) {
        const x = device(t.x), y = device(t.y);
        t.fill(img.data, W, x - left, y - top, device(t.x + t.w) - x, device(t.y + t.h) - y);
      }
      c.putImageData(img, left, top);
    },
  };
}
