// The overview's tiles: fetched as the map needs them, painted once into small
// canvases (the latest few hundred kept), and the best loaded stand-in for a tile.
import type { Chunk } from "../../wire/types";
import { parentOf, TILE, type TilePlace } from "./overview_geometry";
import { keyOf, type Overview } from "./overview_state";

/** Tile pictures kept (256 KB each). */
const MAX_IMAGES = 256;

function imageOf(o: Overview, chunk: Chunk): HTMLCanvasElement {
  const c = document.createElement("canvas");
  c.width = c.height = TILE;
  const g = c.getContext("2d");
  const bytes = chunk.arrays.tile?.data;
  if (g && bytes) {
    const img = g.createImageData(TILE, TILE);
    for (let i = 0; i < TILE * TILE; i++) img.data.set(o.lut.subarray((bytes[i] as number) * 4, (bytes[i] as number) * 4 + 4), i * 4);
    g.putImageData(img, 0, 0);
  }
  return c;
}

/** Fetch the tiles not loaded or on their way; draw again when they arrive. */
export function ask(o: Overview, keys: string[]): void {
  const { images, asked, failed } = o;
  const want = keys.filter((k) => !images.has(k) && !asked.has(k));
  if (!want.length) return;
  for (const k of want) asked.add(k);
  o.ctx.data.request(want).then((got) => {
    for (const k of want) {
      const c = got.get(k);
      if (!c) continue;
      if (c.error) failed.set(k, c.error);
      else images.set(k, imageOf(o, c));
      // A long session's zooming leaves many tiles behind: keep the latest few hundred.
      for (const old of images.keys()) { if (images.size <= MAX_IMAGES) break; images.delete(old); asked.delete(old); }
    }
    o.redraw();
  }).catch(() => undefined);
}

/** The loaded tile that covers `t` best: itself or an ancestor, with the part of it `t` is. */
export function bestImage(o: Overview, t: TilePlace): { img: HTMLCanvasElement; sx: number; sy: number; sw: number } | null {
  let at: TilePlace | null = t, f = 1;
  while (at) {
    const img = o.images.get(keyOf(o, at));
    if (img) {
      const sw = TILE / f;
      return { img, sx: (t.col % f) * sw, sy: (t.row % f) * sw, sw };
    }
    at = parentOf(at);
    f *= 2;
  }
  return null;
}
