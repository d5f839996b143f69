// The model view's answers: hover a cell (its preview, its full chunk fetched after
// a pause), click it (open it in the head or neuron view), the toolbar's controls,
// and the store's changes.
import { LONG_INPUT, type HeatScale } from "../../colors";
import { attnKey } from "../../wire/keys";
import type { Listeners } from "../common";
import { drawPreview, placePreview, sayScale, scene } from "./model_draw";
import { valueSwitch } from "./model_value";
import { cellAt, GAP, placedOrigin } from "./model_grid";
import { loadStats, loadThumbs } from "./model_load";
import { loadSegments, resetSegments, segmentMode, segmentPair } from "./model_segments";
import { AXIS_LEFT, MAP } from "./model_preview";
import { firstRow, keepScale, readModelTheme, setLuts, streamNow, type Cell, type ModelView } from "./model_state";

const PREVIEW_W = AXIS_LEFT + MAP + 4;
const HOVER_FETCH_MS = 120;

/** The cell under the pointer, as (layer, head): columns are ranks when heads are ranked. */
function cellUnder(m: ModelView, e: MouseEvent): Cell | null {
  const r = m.dom.canvas.getBoundingClientRect();
  const sm = streamNow(m);
  return cellAt(m.geo, e.clientX - r.left, e.clientY - r.top, sm.layers.length, sm.num_heads, scene(m).order);
}

/** The query row at the click's height within a long input's cell (rows `firstRow()..q_len`), or null. */
function clickedQuery(m: ModelView, e: MouseEvent, cell: Cell): number | null {
  const sm = streamNow(m);
  if (m.signed || sm.q_len <= LONG_INPUT) return null;
  const r = m.dom.canvas.getBoundingClientRect();
  const origin = placedOrigin(m.geo, cell.l, cell.h, sm.num_heads, scene(m).order);
  const share = Math.max(0, Math.min(1, (e.clientY - r.top - origin.y) / m.geo.cell));
  const from = firstRow(m);
  return Math.min(sm.q_len - 1, from + Math.floor(share * (sm.q_len - from)));
}

/** No cell hovered: the preview hidden, its pending fetch dropped. */
export function hideHover(m: ModelView): void {
  m.hoverCell = null;
  m.dom.preview.hidden = true;
  if (m.hoverTimer) { clearTimeout(m.hoverTimer); m.hoverTimer = null; }
}

function hover(m: ModelView, e: MouseEvent): void {
  const { store, data } = m.ctx;
  const { preview } = m.dom;
  const cell = cellUnder(m, e);
  if (!cell) { hideHover(m); return; }
  preview.hidden = false;
  const origin = placedOrigin(m.geo, cell.l, cell.h, streamNow(m).num_heads, scene(m).order);
  preview.style.left = `${Math.min(origin.x + m.geo.cell + GAP + 8, Math.max(0, m.geo.width - PREVIEW_W - 8))}px`;
  placePreview(m, origin.y);
  const same = m.hoverCell?.l === cell.l && m.hoverCell.h === cell.h;
  if (segmentMode(m)) {
    // Collapsed rows: the pointer's place in the cell names its (query, key) segments.
    const r = m.dom.canvas.getBoundingClientRect();
    const share = { x: (e.clientX - r.left - origin.x) / m.geo.cell, y: (e.clientY - r.top - origin.y) / m.geo.cell };
    const pair = segmentPair(m, cell.l, cell.h, share);
    if (same && pair === m.hoverPair) return;
    m.hoverPair = pair;
    m.hoverCell = cell;
    loadSegments(m, [cell.l]);
    loadStats(m, true);
    drawPreview(m, cell);
    return;
  }
  if (same) return;
  m.hoverCell = cell;
  loadStats(m, true);
  drawPreview(m, cell);
  if (m.hoverTimer) clearTimeout(m.hoverTimer);
  const key = attnKey(store.get().stream, cell.l, cell.h);
  if (data.peek(key)) return;
  m.hoverTimer = setTimeout(() => {
    m.hoverTimer = null;
    data.request([key]).then(() => {
      if (m.hoverCell?.l === cell.l && m.hoverCell.h === cell.h) drawPreview(m, cell);
    }).catch(() => undefined);
  }, HOVER_FETCH_MS);
}

/** The pointer on the grid and the toolbar's controls. */
export function bindModelEvents(m: ModelView, L: Listeners): void {
  const { store } = m.ctx;
  const { canvas, onlyBox, scaleSel } = m.dom;
  L.on(onlyBox, "change", () => store.set({ generated_only: onlyBox.checked }));
  L.on(m.dom.segBox, "change", () => store.set({ segment_rows: m.dom.segBox.checked }));
  m.syncValues = valueSwitch(m, L);
  m.syncValues();
  // Collapsed rows load a layer as its row comes into the window (any scrolling box).
  L.on(window, "scroll", () => loadSegments(m), { capture: true, passive: true });
  m.onSegments = () => { if (m.hoverCell) drawPreview(m, m.hoverCell); };
  L.on(scaleSel, "change", () => { m.heat = scaleSel.value as HeatScale; keepScale(store, m.heat); setLuts(m); sayScale(m); m.redraw(); });
  L.on<MouseEvent>(canvas, "mousemove", (e) => hover(m, e));
  L.on(canvas, "mouseleave", () => hideHover(m));
  L.on<MouseEvent>(canvas, "click", (e) => {
    const cell = cellUnder(m, e);
    if (!cell) return;
    const open = { layer: cell.l, heads: [cell.h], head: cell.h, view: e.shiftKey ? "neuron" as const : "head" as const };
    // A long input's cell is a map of its rows: the click's height picks the query the view opens on.
    const query = clickedQuery(m, e, cell);
    store.set(query == null ? open : { ...open, query });
  });
}

/** Follow the store: theme, stream, rows shown and ranking; returns the unsubscribe. */
export function followStore(m: ModelView): () => void {
  return m.ctx.store.subscribe((changed) => {
    if (changed.has("theme_rev")) readModelTheme(m);
    if (changed.has("stream") || changed.has("value_weighted") || changed.has("generated_only")) sayScale(m);
    m.syncValues();
    if (changed.has("stream") || changed.has("generated_only")) loadThumbs(m);
    if (changed.has("stream") || changed.has("rank_by")) loadStats(m);
    if (changed.has("stream")) resetSegments(m);
    if (changed.has("stream") || changed.has("segment_rows")) { hideHover(m); loadSegments(m); }
    m.redraw();
  });
}
