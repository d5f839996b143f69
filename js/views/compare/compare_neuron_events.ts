// The comparison neuron view's answers: a click on a key's row selects it, the
// query input moves the store, and the store's changes load and redraw.
import { readTheme } from "../../colors";
import type { Listeners } from "../common";
import { loadCompareNeuron } from "./compare_neuron_load";
import { st, stream, type CompareNeuronView } from "./compare_neuron_state";

/** The key rows and the query input (the head picker binds itself: neuron_controls.ts). */
export function bindCompareNeuronEvents(v: CompareNeuronView, L: Listeners): void {
  const { store } = v.ctx;
  const { table, queryIn } = v.dom;
  L.on(table, "click", (e) => {
    const r = (e.target as HTMLElement).closest?.("[data-key]") as HTMLElement | null;
    if (r) store.set({ key: Number(r.dataset.key) });
  });
  L.on(queryIn, "change", () => {
    const q = Math.round(Number(queryIn.value));
    if (Number.isFinite(q) && q >= 0 && q < stream(v).q_len) store.set({ query: q });
  });
}

/** Follow the store: theme, and a new layer or head's chunks; returns the unsubscribe. */
export function followStore(v: CompareNeuronView): () => void {
  const { store, root } = v.ctx;
  return store.subscribe((changed) => {
    if (changed.has("theme_rev")) v.theme = readTheme(root, st(v).resolved_theme === "dark");
    if (changed.has("stream") || changed.has("layer") || changed.has("head")) loadCompareNeuron(v);
    v.redraw();
  });
}
