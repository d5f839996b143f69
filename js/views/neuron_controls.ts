// The neuron view's head picker: the head it explains, chosen in the view itself
// (←/→ also step through heads; the help lists them).
import type { AppState, Store } from "../types";
import { h, type Listeners } from "./common";

/** A "head N" select bound to the store's `head`. */
export function headPicker(L: Listeners, store: Store<AppState>, numHeads: () => number): HTMLSelectElement {
  const sel = h("select", "attnscope-select", { "aria-label": "Head", "data-testid": "neuron-head", title: "The head explained (← / → step through heads)" });
  syncHeadPicker(sel, numHeads(), store.get().head);
  L.on(sel, "change", () => store.set({ head: Number(sel.value) }));
  return sel;
}

/** One option per head, the current one selected (rebuilt only when the count changes). */
export function syncHeadPicker(sel: HTMLSelectElement, heads: number, head: number): void {
  if (sel.options.length !== heads) {
    sel.replaceChildren();
    for (let i = 0; i < heads; i++) {
      const o = h("option", "", { value: String(i) });
      o.textContent = `head ${i}`;
      sel.append(o);
    }
  }
  sel.value = String(head);
}
