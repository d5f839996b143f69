// Where the overview's tiles go (docs/protocol.md, "Overview tiles"): the same pyramid
// as src/attnscope/encode/tiles.py, and the map from the canvas to query and key tokens.

/** Cells on a side of a tile. */
export const TILE = 256;
/** The closest zoom: pixels a token may take. */
export const MAX_PX_PER_TOKEN = 24;

/** Tokens a cell covers at level 0: the least power of two that fits the matrix in one tile. */
export function topSpan(qLen: number, kLen: number): number {
  let span = 1;
  while (span * TILE < Math.max(qLen, kLen)) span *= 2;
  return span;
}

/** Zoom levels; the last has one weight per cell. */
export const levelCount = (qLen: number, kLen: number): number => Math.log2(topSpan(qLen, kLen)) + 1;

/** Tokens a cell covers at `level`. */
export const spanAt = (qLen: number, kLen: number, level: number): number => topSpan(qLen, kLen) / 2 ** level;

/** What the canvas shows: token `(x0, y0)` (key, query) at its top-left corner, `scale` pixels a token. */
export interface OverviewView {
  x0: number;
  y0: number;
  scale: number;
}

export interface TilePlace {
  level: number;
  row: number;
  col: number;
}

/** The whole matrix in a `width` × `height` canvas. */
export function fitView(qLen: number, kLen: number, width: number, height: number): OverviewView {
  return { x0: 0, y0: 0, scale: Math.min(width / Math.max(1, kLen), height / Math.max(1, qLen)) };
}

/** Pixels a cell takes at least (finer tiles would cost more than the screen shows). */
export const MIN_CELL_PX = 2;

/** The level whose cells are the fewest tokens that still take MIN_CELL_PX pixels. */
export function levelFor(qLen: number, kLen: number, scale: number): number {
  const top = topSpan(qLen, kLen);
  let span = 1;
  while (span * scale < MIN_CELL_PX && span < top) span *= 2;
  return Math.log2(top / span);
}

/** The tiles a view needs, nearest the centre first. */
export function visibleTiles(qLen: number, kLen: number, view: OverviewView, width: number, height: number): TilePlace[] {
  const level = levelFor(qLen, kLen, view.scale);
  const cover = TILE * spanAt(qLen, kLen, level);
  const rows = Math.ceil(qLen / cover), cols = Math.ceil(kLen / cover);
  const y1 = view.y0 + height / view.scale, x1 = view.x0 + width / view.scale;
  const r0 = Math.max(0, Math.floor(view.y0 / cover)), r1 = Math.min(rows - 1, Math.floor((y1 - 1e-9) / cover));
  const c0 = Math.max(0, Math.floor(view.x0 / cover)), c1 = Math.min(cols - 1, Math.floor((x1 - 1e-9) / cover));
  const out: TilePlace[] = [];
  for (let row = r0; row <= r1; row++) for (let col = c0; col <= c1; col++) out.push({ level, row, col });
  const cy = (view.y0 + y1) / 2 / cover - 0.5, cx = (view.x0 + x1) / 2 / cover - 0.5;
  return out.sort((a, b) => Math.hypot(a.row - cy, a.col - cx) - Math.hypot(b.row - cy, b.col - cx));
}

/** The tile one level up that holds `t`, and which quarter of it (`[dx, dy]` in 0..1 halves). */
export function parentOf(t: TilePlace): TilePlace | null {
  return t.level > 0 ? { level: t.level - 1, row: Math.floor(t.row / 2), col: Math.floor(t.col / 2) } : null;
}

/** Keep the view on the matrix: no zooming out past the whole, no panning past its edges. */
export function clampView(qLen: number, kLen: number, v: OverviewView, width: number, height: number): OverviewView {
  const fit = fitView(qLen, kLen, width, height).scale;
  const scale = Math.min(Math.max(v.scale, fit), Math.max(fit, MAX_PX_PER_TOKEN));
  const clampAxis = (at: number, len: number, px: number): number => {
    const shown = px / scale;
    return shown >= len ? 0 : Math.min(Math.max(at, 0), len - shown);
  };
  return { x0: clampAxis(v.x0, kLen, width), y0: clampAxis(v.y0, qLen, height), scale };
}

/** Zoom by `factor` about the canvas point `(px, py)`, which keeps its token. */
export function zoomAt(qLen: number, kLen: number, v: OverviewView, px: number, py: number, factor: number, width: number, height: number): OverviewView {
  const kx = v.x0 + px / v.scale, qy = v.y0 + py / v.scale;
  const scale = v.scale * factor;
  return clampView(qLen, kLen, { x0: kx - px / scale, y0: qy - py / scale, scale }, width, height);
}

/** The (query, key) token under canvas point `(px, py)`. */
export function tokenAt(qLen: number, kLen: number, v: OverviewView, px: number, py: number): { query: number; key: number } {
  const clamp = (x: number, n: number): number => Math.min(n - 1, Math.max(0, Math.floor(x)));
  return { query: clamp(v.y0 + py / v.scale, qLen), key: clamp(v.x0 + px / v.scale, kLen) };
}

/** A view `tokens` tokens tall (at least fit) centred on query row `query` and key `key`. */
export function centreOn(qLen: number, kLen: number, query: number, key: number, tokens: number, width: number, height: number): OverviewView {
  const scale = height / Math.max(1, tokens);
  return clampView(qLen, kLen, { x0: key + 0.5 - width / scale / 2, y0: query + 0.5 - height / scale / 2, scale }, width, height);
}
