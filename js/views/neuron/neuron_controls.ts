// The neuron view's head picker: the head it explains, chosen in the view itself
// (←/→ also step through heads; the help lists them).
import type { AppState, Store } from "../../wire/types";
import { h, type Listeners } from "../common";

/** A "head N" select bound to the store's `head`; `missing` gives the heads a page holds no q/k of. */
export function headPicker(L: Listeners, store: Store<AppState>, numHeads: () => number, missing: () => readonly number[] = () => []): HTMLSelectElement {
  const sel = h("select", "attnscope-select", { "aria-label": "Head", "data-testid": "neuron-head", title: "The head explained (← / → step through heads)" });
  syncHeadPicker(sel, numHeads(), store.get().head, missing());
  L.on(sel, "change", () => store.set({ head: Number(sel.value) }));
  return sel;
}

/**
 * One option per head, the current one selected (rebuilt only when the count changes);
 * heads in `missing` (an exported page left their q and k out) are marked so.
 */
export function syncHeadPicker(sel: HTMLSelectElement, heads: number, head: number, missing: readonly number[] = []): void {
  if (sel.options.length !== heads) {
    sel.replaceChildren();
    for (let i = 0; i < heads; i++) sel.append(h("option", "", { value: String(i) }));
  }
  for (let i = 0; i < heads; i++) {
    const o = sel.options[i] as HTMLOptionElement, gone = missing.includes(i);
    o.textContent = gone ? `head ${i} (no q/k in this page)` : `head ${i}`;
    if (gone) o.dataset.missing = "true";
    else delete o.dataset.missing;
  }
  sel.value = String(head);
}
