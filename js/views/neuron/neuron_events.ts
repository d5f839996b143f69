// The neuron view's answers: hover a strip (the dimension's numbers), click a key
// (select it, or make its token the query), the sort and query controls, the store.
import { arr } from "../../data";
import { readTheme } from "../../colors";
import { keySide, querySide } from "../../tokens";
import { fmt, type Listeners } from "../common";
import { loadQk } from "./neuron_load";
import { cellW } from "./neuron_paint";
import { sameSides, sayShownQuery, st, streamNow, type NeuronView } from "./neuron_state";

/** The dimension under the pointer in a strip, or -1. */
function dimAt(n: NeuronView, e: MouseEvent, c: HTMLCanvasElement): number {
  if (!n.rows) return -1;
  const x = e.clientX - c.getBoundingClientRect().left;
  const d = Math.floor(x / cellW(n.rows.D));
  return d >= 0 && d < n.rows.D ? d : -1;
}

function onMove(n: NeuronView, e: MouseEvent): void {
  const { readout, view } = n.dom;
  const rows = n.rows;
  const t = e.target as HTMLElement;
  if (!(t instanceof HTMLCanvasElement) || !t.classList.contains("attnscope-nv-strip") || !rows) return;
  const d = dimAt(n, e, t);
  if (d === n.hoverDim) return;
  n.hoverDim = d;
  const rowEl = t.closest("[data-key]") as HTMLElement | null;
  const j = rowEl ? Number(rowEl.dataset.key) : -1;
  const kd = j >= 0 && n.chunk ? (arr(n.chunk, "k").data[j * rows.D + d] as number) : NaN;
  readout.textContent = d < 0 ? "" : `dim ${d}: q=${fmt(rows.q[d] as number)}${j >= 0 ? `, k=${fmt(kd)}, q×k=${fmt((rows.q[d] as number) * kd)}` : ""}`;
  view.dataset.hoverDim = String(d);
  n.redraw();
}

/** The pointer on the strips and rows, the scroll, the sort and the query box. */
export function bindNeuronEvents(n: NeuronView, L: Listeners): void {
  const { store } = n.ctx;
  const { view, viewport, body, readout, sortSel, queryIn } = n.dom;
  L.on<MouseEvent>(view, "mousemove", (e) => onMove(n, e));
  L.on(viewport, "mouseleave", () => { if (n.hoverDim >= 0) { n.hoverDim = -1; readout.textContent = ""; delete view.dataset.hoverDim; n.redraw(); } });
  L.on(viewport, "scroll", () => n.redraw(), { passive: true });
  L.on(body, "click", (e) => {
    const t = e.target as HTMLElement;
    const r = t.closest?.("[data-key]") as HTMLElement | null;
    if (!r) return;
    const j = Number(r.dataset.key);
    // A key's token is also a query when both sides are the same tokens: its label makes it the query.
    if (t.closest?.(".attnscope-nv-keytok") && sameSides(n)) store.set({ query: j, key: null });
    else store.set({ key: j });
  });
  L.on(sortSel, "change", () => { n.rowsFor = ""; n.redraw(); });
  const applyQuery = (): void => {
    const v = Math.round(Number(queryIn.value));
    if (queryIn.value !== "" && Number.isFinite(v) && v >= 0 && v < streamNow(n).q_len) store.set({ query: v });
  };
  L.on(queryIn, "change", applyQuery);
  // Enter applies at once; JupyterLab's own key handling keeps "change" from firing until the box loses focus.
  L.on<KeyboardEvent>(queryIn, "keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    e.stopPropagation();
    applyQuery();
  });
}

/** Follow the store: theme, stream (its token sides), layer and head; returns the unsubscribe. */
export function followStore(n: NeuronView): () => void {
  const { store, meta, root } = n.ctx;
  return store.subscribe((changed) => {
    if (changed.has("theme_rev")) n.theme = readTheme(root, st(n).resolved_theme === "dark");
    if (changed.has("stream")) { n.sideQ = querySide(meta, streamNow(n)); n.sideK = keySide(meta, streamNow(n)); }
    if (changed.has("stream") || changed.has("query")) sayShownQuery(n);
    if (changed.has("stream") || changed.has("layer") || changed.has("head")) loadQk(n);
    n.redraw();
  });
}
