// The A / B / A − B switch of a comparison, and a line saying what is compared.
import { COMPARE_SIDE_LABELS } from "../../labels";
import { labelElement } from "../../label_text";
import { COMPARE_SIDES } from "../../selection";
import type { AppState, CompareSide, ComparisonMeta, Meta, Store } from "../../wire/types";
import { h, type Listeners } from "../common";

/** The side a comparison shows (null stands for A − B); null outside a comparison. */
export function comparedSide(meta: Meta, s: AppState): CompareSide | null {
  if (!meta.comparison) return null;
  return s.compare_side ?? "diff";
}

const TITLES: Readonly<Record<CompareSide, string>> = {
  a: "Input A's attention",
  b: "Input B's attention",
  diff: "A − B: red where A attends more, blue where B does",
};

/** One button per side; the pressed one is the store's. Returns the group and its sync. */
export function compareToggle(L: Listeners, store: Store<AppState>, meta: Meta): { el: HTMLElement; sync: () => void } {
  const el = h("div", "attnscope-compare", { role: "group", "aria-label": "Compare: input A, input B, or A − B", "data-testid": "compare-toggle" });
  const buttons = COMPARE_SIDES.map((side) => {
    const b = h("button", "attnscope-tab", { type: "button", "data-side": side, "data-testid": `compare-${side}`, title: TITLES[side] });
    b.textContent = COMPARE_SIDE_LABELS[side];
    L.on(b, "click", () => store.set({ compare_side: side }));
    el.append(b);
    return b;
  });
  const sync = (): void => {
    const side = comparedSide(meta, store.get());
    for (const b of buttons) b.setAttribute("aria-pressed", b.dataset.side === side ? "true" : "false");
  };
  sync();
  return { el, sync };
}

/** "A: … · B: …" with the tokens where the inputs differ, and how many tokens are aligned. */
export function comparisonSummary(c: ComparisonMeta): HTMLElement {
  const el = h("div", "attnscope-compare-summary", { "data-testid": "compare-summary" });
  const words = (side: ComparisonMeta["a"], paired: Set<number>, other: (i: number) => string | undefined): HTMLElement => {
    const span = h("span", "attnscope-compare-text");
    side.labels.forEach((label, i) => {
      const differs = !paired.has(i) || other(i) !== label;
      const w = h(differs ? "mark" : "span", differs ? "attnscope-compare-differs" : "");
      w.append(labelElement(label));
      span.append(w, " ");
    });
    return span;
  };
  const bOf = new Map(c.alignment.map(([i, j]) => [i, j]));
  const aOf = new Map(c.alignment.map(([i, j]) => [j, i]));
  const a = words(c.a, new Set(bOf.keys()), (i) => c.b.labels[bOf.get(i) ?? -1]);
  const b = words(c.b, new Set(aOf.keys()), (j) => c.a.labels[aOf.get(j) ?? -1]);
  const n = c.alignment.length, whole = n === c.a.labels.length && n === c.b.labels.length;
  el.append("A: ", a, "· B: ", b, whole ? "" : `· ${n} aligned tokens`);
  return el;
}
