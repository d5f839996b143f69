// The image view's answers: the head and scale selects, a click on a token of the
// strip (the query), the pointer over the picture (the hovered patch), the store.
import { readTheme } from "../../colors";
import type { Listeners } from "../common";
import { hitTest, type Hit } from "./image_geometry";
import { loadLayer } from "./image_load";
import type { ImageView } from "./image_state";

export function bindImageEvents(v: ImageView, L: Listeners): void {
  const { store } = v.ctx;
  const { headSel, scaleSel, strip, canvas } = v.dom;
  L.on(headSel, "change", () => {
    const choice = headSel.value === "selected" || headSel.value === "mean" ? headSel.value : Number(headSel.value);
    v.choice = choice;
    if (typeof choice === "number") store.set({ head: choice });
    v.redraw();
  });
  L.on(scaleSel, "change", () => v.redraw());
  L.on<MouseEvent>(strip, "click", (e) => {
    const b = (e.target as HTMLElement).closest<HTMLElement>("[data-query]");
    if (b) store.set({ query: Number(b.dataset.query), queries: [] });
  });
  const at = (e: MouseEvent): Hit | null => {
    const r = canvas.getBoundingClientRect();
    return hitTest(v.layout, e.clientX - r.left, e.clientY - r.top);
  };
  L.on<MouseEvent>(canvas, "mousemove", (e) => {
    const next = at(e);
    if (next?.column === v.hit?.column && (next == null) === (v.hit == null)) return;
    v.hit = next;
    v.redraw();
  });
  L.on(canvas, "mouseleave", () => { v.hit = null; v.redraw(); });
}

/** Follow the store: theme, layer, the head the other views picked; returns the unsubscribe. */
export function followStore(v: ImageView): () => void {
  const { store, root } = v.ctx;
  return store.subscribe((changed) => {
    if (changed.has("theme_rev")) v.theme = readTheme(root, store.get().resolved_theme === "dark");
    if (changed.has("layer")) loadLayer(v);
    if (changed.has("head") && typeof v.choice === "number" && store.get().head !== v.choice) {
      v.choice = store.get().head;
      v.dom.headSel.value = String(v.choice);
    }
    v.redraw();
  });
}
