// The overview's answers: the head select, zoom (buttons, wheel), drag to pan,
// hover (the cell's tokens), click (open the head or neuron view there), a found
// token, and the store's changes.
import { readTheme } from "../../colors";
import { isolate } from "../../label_text";
import { keySide } from "../../tokens";
import type { Listeners } from "../common";
import { thumbLut } from "../model/model_grid";
import { fillHeads, paintRamp, say } from "./overview_draw";
import { centreOn, clampView, fitView, tokenAt, zoomAt } from "./overview_geometry";
import { labels, streamNow, type Overview } from "./overview_state";

/** Rows a search jump shows: close enough that each row is labelled with its token. */
const JUMP_ROWS = 40;

/** Bring the map to a found token's row, and make it the query. */
export function jump(o: Overview, row: number): void {
  const s = streamNow(o);
  o.view = centreOn(s.q_len, s.k_len, row, Math.max(0, row - JUMP_ROWS / 2), JUMP_ROWS, o.side, o.side);
  o.ctx.store.set({ query: row, queries: [] });
  o.redraw();
}

function zoomBy(o: Overview, f: number, px = o.side / 2, py = o.side / 2): void {
  const s = streamNow(o);
  o.view = zoomAt(s.q_len, s.k_len, o.view, px, py, f, o.side, o.side);
  o.redraw();
}

/** The head select, the zoom buttons and the pointer on the map. */
export function bindOverviewEvents(o: Overview, L: Listeners): void {
  const { store, meta } = o.ctx;
  const { headSel, zoomIn, zoomOut, fit, canvas } = o.dom;
  L.on(headSel, "change", () => {
    const head = headSel.value === "mean" ? "mean" : Number(headSel.value);
    o.head = head;
    if (head !== "mean") store.set({ head });
    o.redraw();
  });
  L.on(zoomIn, "click", () => zoomBy(o, 2));
  L.on(zoomOut, "click", () => zoomBy(o, 0.5));
  L.on(fit, "click", () => { o.view = fitView(streamNow(o).q_len, streamNow(o).k_len, o.side, o.side); o.redraw(); });
  L.on<WheelEvent>(canvas, "wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoomBy(o, Math.exp(-e.deltaY * 0.002), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const s = streamNow(o);
    const { query, key } = tokenAt(s.q_len, s.k_len, o.view, e.clientX - r.left, e.clientY - r.top);
    const keyNames = keySide(meta, s).labels;
    canvas.title = `query ${query} “${isolate(labels(o)[query] ?? "")}” → key ${key} “${isolate(keyNames[key] ?? "")}”: click to open the head view here`;
  });
  L.on<MouseEvent>(canvas, "mousedown", (e) => { o.drag = { x: e.clientX, y: e.clientY, moved: false, from: o.view }; });
  L.on<MouseEvent>(window, "mousemove", (e) => {
    const drag = o.drag;
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (!drag.moved) return;
    const s = streamNow(o);
    o.view = clampView(s.q_len, s.k_len, { ...drag.from, x0: drag.from.x0 - dx / o.view.scale, y0: drag.from.y0 - dy / o.view.scale }, o.side, o.side);
    o.redraw();
  });
  L.on<MouseEvent>(window, "mouseup", (e) => {
    const was = o.drag;
    o.drag = null;
    if (!was || was.moved || e.target !== canvas) return;
    const r = canvas.getBoundingClientRect();
    const s = streamNow(o);
    const { query, key } = tokenAt(s.q_len, s.k_len, o.view, e.clientX - r.left, e.clientY - r.top);
    const heads = o.head === "mean" ? {} : { head: o.head, heads: [o.head] };
    store.set({ ...heads, query, key, queries: [], view: e.shiftKey ? "neuron" : "head" });
  });
}

/** Follow the store: theme (tiles repainted), stream, head, layer; returns the unsubscribe. */
export function followStore(o: Overview): () => void {
  const { store, root } = o.ctx;
  return store.subscribe((changed) => {
    if (changed.has("theme_rev")) {
      o.theme = readTheme(root, store.get().resolved_theme === "dark");
      o.lut = thumbLut(o.theme, "log");
      paintRamp(o);
      o.images.clear();
      o.asked.clear();
    }
    if (changed.has("stream")) { fillHeads(o); o.side = 0; }
    if (changed.has("head") && store.get().head !== o.head && o.head !== "mean") { o.head = store.get().head; o.dom.headSel.value = String(o.head); }
    if (changed.has("stream") || changed.has("layer")) say(o);
    o.redraw();
  });
}
