// The head view's toolbar controls: the head swatches and the sentence-pair filter.
import { headColor, textOn } from "../../colors";
import { PAIR_FILTER_LABELS } from "../../labels";
import { PAIR_FILTERS } from "../../selection";
import type { AppState, Store } from "../../wire/types";
import { h, type Listeners } from "../common";

const headOf = (e: Event): number | null => {
  const b = (e.target as HTMLElement).closest?.("[data-head]") as HTMLElement | null;
  return b ? Number(b.dataset.head) : null;
};

/**
 * One button per head, in its line colour: click toggles the head (none left
 * means all), double-click shows it alone and makes it the neuron view's head.
 */
export function headSwatches(container: HTMLElement, L: Listeners, store: Store<AppState>, numHeads: () => number): {
  /** Rebuild for the current head count; returns each head's colour. */
  build: (dark: boolean) => string[];
  /** Mark the selected heads pressed. */
  sync: () => void;
} {
  L.on(container, "click", (e) => {
    const hd = headOf(e);
    if (hd === null) return;
    const cur = store.get().heads;
    let next = cur.includes(hd) ? cur.filter((x) => x !== hd) : [...cur, hd].sort((a, b) => a - b);
    if (!next.length) next = Array.from({ length: numHeads() }, (_, i) => i);
    store.set({ heads: next });
  });
  L.on(container, "dblclick", (e) => {
    const hd = headOf(e);
    if (hd !== null) store.set({ heads: [hd], head: hd });
  });
  const sync = (): void => {
    const on = new Set(store.get().heads);
    for (const b of container.children) b.setAttribute("aria-pressed", on.has(Number((b as HTMLElement).dataset.head)) ? "true" : "false");
  };
  const build = (dark: boolean): string[] => {
    container.replaceChildren();
    const colors = Array.from({ length: numHeads() }, (_, i) => headColor(i, dark));
    colors.forEach((color, i) => {
      const b = h("button", "attnscope-swatch", { type: "button", "data-head": String(i), "aria-label": `Head ${i}` });
      b.style.setProperty("--swatch", color);
      b.style.setProperty("--swatch-fg", textOn(color)); // readable on yellow and light grey too
      b.textContent = String(i);
      container.append(b);
    });
    sync();
    return colors;
  };
  return { build, sync };
}

/** The sentence-pair filter (A→B = queries in A, keys in B), bound to the store. */
export function pairFilterSelect(L: Listeners, store: Store<AppState>): HTMLSelectElement {
  const sel = h("select", "attnscope-select", { "aria-label": "Sentence pair filter", "data-testid": "pair-filter" });
  for (const v of PAIR_FILTERS) {
    const o = h("option", "", { value: v });
    o.textContent = PAIR_FILTER_LABELS[v];
    sel.append(o);
  }
  sel.value = store.get().pair_filter;
  L.on(sel, "change", () => store.set({ pair_filter: sel.value as AppState["pair_filter"] }));
  return sel;
}
