// The model view's pictures: the grid of every layer's heads (with the ranking's
// badges), its scale legend, and the hovered cell's large preview.
import { hex, LONG_INPUT } from "../../colors";
import { attnKey } from "../../wire/keys";
import { arr } from "../../data";
import { generationOf } from "../../generation";
import { canvasPainter } from "../../paint/canvas_painter";
import { keySide, querySide } from "../../tokens";
import { markDrawn, sizeCanvas, widthOf } from "../common";
import { divergenceNote, gridOrder, signedThumbnails } from "../compare/compare_grid";
import { gridGeometry, heatmapTile, rowStep, placedOrigin, paintGrid, rowsToOwnMax, THUMB_DECADES, type GridScene, type Thumbnails } from "./model_grid";
import { AXIS_LEFT, AXIS_TOP, drawPreview as paintPreview, MAP } from "./model_preview";
import { cellNumbers, layerRanking, paintBadges, statValues } from "./model_stats";
import { loadSegments, segmentLayer, segmentMode, segmentSide, visibleLayers } from "./model_segments";
import { segmentsOf } from "../head/head_segments";
import { firstRow, perRow, streamNow, type Cell, type ModelView } from "./model_state";
import { shownThumbBytes, valueLegend, valueWeighting } from "./model_value";

/** The legend's words for the scale. */
export function sayScale(m: ModelView): void {
  const { legend, view } = m.dom;
  legend.textContent = m.signed
    ? "each cell scaled to its own largest change"
    : m.heat === "log"
      ? `log scale over ${THUMB_DECADES} decades of each cell's largest weight (faintest: 10⁻${THUMB_DECADES} of it)`
      : perRow(m)
        ? `linear, each row of a cell scaled to its own largest weight (over ${LONG_INPUT} tokens a row's weights are too faint beside the cell's largest)`
        : "each cell scaled to its own largest weight (linear)";
  legend.textContent += valueLegend(m);
  view.dataset.scale = m.heat;
  view.dataset.valueWeighted = String(!!valueLegend(m));
  view.dataset.perRow = String(perRow(m));
}

/** The loaded thumbnails; rows and columns from the chunk's shape (falls back to _meta). */
export function thumbnails(m: ModelView): Thumbnails | null {
  const thumbs = m.thumbs;
  if (!thumbs || thumbs.error) return null;
  const sm = streamNow(m), a = arr(thumbs, "thumbs");
  if (m.signed) return signedThumbnails(thumbs, sm);
  const rows = a.shape[2] ?? sm.thumb_rows, cols = a.shape[3] ?? sm.thumb_cols;
  const weighted = shownThumbBytes(m, a.data as Uint8Array, rows, cols);
  if (!weighted) return null; // the value norms are on their way
  let bytes = weighted;
  if (perRow(m)) {
    if (m.ownMax?.from !== bytes) m.ownMax = { from: bytes, data: rowsToOwnMax(bytes, cols) };
    bytes = m.ownMax.data;
  }
  return { data: bytes, rows, cols };
}

/** The ranking statistic's values, once its chunk is here; null without a ranking. */
export const ranked = (m: ModelView): Float32Array | null => statValues(m.stats, m.ctx.store.get().rank_by);

export function scene(m: ModelView): GridScene {
  const sm = streamNow(m), s = m.ctx.store.get(), values = ranked(m);
  const compared = gridOrder(m.ctx.meta, s);
  const order = compared ?? (values ? layerRanking(values, sm.layers.length, sm.num_heads) : null);
  const layerCells = segmentMode(m) ? (l: number) => segmentLayer(m, l) : null;
  return { geo: m.geo, layerNumbers: sm.layers, heads: sm.num_heads, thumbs: thumbnails(m), lut: m.lut, theme: m.theme, selected: { layer: s.layer, head: s.head }, order, orderWithinLayers: !compared, layerCells };
}

/** The grid, and the ranking's badges over it. */
export function paintAll(m: ModelView, p: Parameters<typeof paintGrid>[0], sc: GridScene): void {
  paintGrid(p, sc);
  const values = ranked(m);
  const name = m.ctx.store.get().rank_by ?? "";
  if (values && sc.order && sc.orderWithinLayers) paintBadges(p, sc.geo, { values, order: sc.order, layers: sc.layerNumbers.length, heads: sc.heads, name }, sc.theme);
}

/** Draw now; `false` when the view has no width (hidden) and nothing was drawn. */
export function drawGrid(m: ModelView): boolean {
  const { store, meta } = m.ctx;
  const { view, only, onlyBox, seg, segBox, canvas, rankBy } = m.dom;
  const sm = streamNow(m);
  const segs = segmentMode(m);
  only.hidden = !!segs || !generationOf(meta, store.get().stream);
  onlyBox.checked = store.get().generated_only;
  seg.hidden = !segmentsOf(meta, store.get().stream);
  segBox.checked = !!segs;
  const width = widthOf(view);
  if (!width) return false; // the scheduler tries again next frame, watchResize once it has a width
  // A ranking's badges get a band under each row (never over the cells); a comparison's order has none.
  const badges = !!ranked(m) && !gridOrder(meta, store.get());
  m.geo = gridGeometry(sm.layers.length, sm.num_heads, width, badges);
  if (segs) loadSegments(m); // the rows on screen, now that the geometry is known
  const dpr = window.devicePixelRatio || 1;
  const c = sizeCanvas(canvas, m.geo.width, m.geo.height, dpr);
  if (c) {
    const p = canvasPainter(c, m.theme.font, dpr, m.pixels);
    p.rect(0, 0, m.geo.width, m.geo.height, hex(m.theme.bg));
    paintAll(m, p, scene(m));
  }
  view.dataset.rankedBy = ranked(m) ? (store.get().rank_by ?? "") : "";
  // Where the cells are (tests and tools aim at a cell without knowing the band).
  view.dataset.cellPx = String(m.geo.cell);
  view.dataset.rowPx = String(rowStep(m.geo));
  if (rankBy) rankBy.value = store.get().rank_by ?? "";
  view.dataset.rows = segs ? "segments" : "tokens";
  // Collapsed rows are ready once the layers on screen have their chunks (or say why not).
  const shown = segs ? visibleLayers(m).map((l) => segmentLayer(m, l)) : [];
  view.dataset.segmentsMissing = String(shown.filter((x) => typeof x === "string").length);
  markDrawn(view, segs ? shown.every((x) => x !== null) : !!m.thumbs && !m.thumbs.error);
  return true;
}

/** The hovered cell, large: from its full-resolution chunk once that has arrived, else its thumbnail. */
export function drawPreview(m: ModelView, cell: Cell): void {
  const { store, data, meta } = m.ctx;
  const { preview, pcanvas, pcap } = m.dom;
  const s = store.get();
  const sm = streamNow(m);
  const from = firstRow(m);
  const numbers = cellNumbers(m.stats, m.statistics, sm.num_heads, cell.l, cell.h);
  pcap.textContent = `Layer ${sm.layers[cell.l] ?? cell.l} · head ${cell.h}${from ? " · generated rows" : ""}${divergenceNote(meta, s.stream, cell.l, cell.h)}${numbers.length ? `\n${numbers.join(" · ")}` : ""}`;
  const place = { x: AXIS_LEFT, y: AXIS_TOP, w: MAP, h: MAP };
  const segs = segmentMode(m);
  if (segs) {
    const got = segmentLayer(m, cell.l), S = segs.labels.length;
    const why = typeof got === "string" ? got : got ? m.hoverPair : "loading the collapsed rows…";
    pcap.textContent = `Layer ${sm.layers[cell.l] ?? cell.l} · head ${cell.h} · ${segs.by === "images" ? "images collapsed" : `${segs.by} as rows`}${why ? `\n${why}` : ""}${numbers.length ? `\n${numbers.join(" · ")}` : ""}`;
    const tile = got && typeof got !== "string" ? heatmapTile(place, got.data.subarray(cell.h * S * S, (cell.h + 1) * S * S), S, S, null, m.lut) : null;
    preview.dataset.source = tile ? "segments" : "none";
    const side = segmentSide(segs);
    paintPreview(pcanvas, { tile, sideQ: side, sideK: side, theme: m.theme });
    // Its caption's lines come and go (the pair under the pointer, statistics): re-place it.
    if (!preview.hidden) placePreview(m, placedOrigin(m.geo, cell.l, cell.h, sm.num_heads, scene(m).order).y);
    return;
  }
  const full = data.peek(attnKey(s.stream, cell.l, cell.h));
  const small = thumbnails(m);
  let tile = null, rowsFrom = 0;
  // Weighted by value norm, the preview is the cell's weighted thumbnail (the full-resolution
  // chunk holds raw weights), and its caption says so.
  const weighted = valueWeighting(m);
  if (weighted) pcap.textContent += "\nweighted by value norm";
  if (full && !full.error && !weighted) {
    rowsFrom = from;
    const rm = arr(full, "rowmax").data.subarray(from);
    let mx = 0;
    for (const v of rm) if (v > mx) mx = v;
    // Keep per-row quantisation honest: scale each row by rowmax / max.
    // (Each row's bytes are to its own largest: left so when the grid's rows are too.)
    const scale = perRow(m) ? null : Array.from(rm, (v) => (mx > 0 ? v / mx : 0));
    const weight = arr(full, "weight").data.subarray(from * sm.k_len);
    tile = heatmapTile(place, weight, sm.q_len - from, sm.k_len, scale, m.attnLut, undefined, m.signed);
    preview.dataset.source = "attn";
  } else if (small) {
    const n = small.rows * small.cols, at = (cell.l * sm.num_heads + cell.h) * n;
    const gain = small.gain?.(cell.l * sm.num_heads + cell.h) ?? null;
    tile = heatmapTile(place, small.data.subarray(at, at + n), small.rows, small.cols, gain, m.lut, undefined, small.signed);
    preview.dataset.source = "thumb";
  }
  // Nothing loaded: the axes alone, the previous cell blanked out.
  paintPreview(pcanvas, { tile, sideQ: querySide(meta, sm), sideK: keySide(meta, sm), theme: m.theme, firstQuery: rowsFrom });
  // Placed once drawn: before its first draw the preview's canvas has no size, and a
  // place chosen for its caption alone let the first hover's preview run past the box.
  if (!preview.hidden) placePreview(m, placedOrigin(m.geo, cell.l, cell.h, sm.num_heads, scene(m).order).y);
}

/**
 * The preview beside its cell, never past the grid's box (which scrolls, and would clip
 * it): lower rows open it upward, and a grid shorter than it (few layers) grows to hold it.
 */
export function placePreview(m: ModelView, y: number): void {
  const { preview, wrap } = m.dom;
  const ph = preview.offsetHeight;
  wrap.style.minHeight = ph > m.geo.height ? `${ph}px` : "";
  preview.style.top = `${Math.max(0, Math.min(y, Math.max(m.geo.height, ph) - ph))}px`;
}
