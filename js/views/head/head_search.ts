// The head view's token search: type a word, Enter jumps to the next query row whose
// label holds it (Shift+Enter: the previous one), so a long input's "needle" is one
// keystroke away. The match becomes the locked query, which scrolls into view.
import { h, type Listeners } from "../common";

/** The `step`-th match (1: next, -1: previous) of `needle` around row `from`, and how many there are. */
export function findToken(labels: readonly string[], needle: string, from: number, step: 1 | -1 = 1): { row: number; rank: number; count: number } | null {
  const q = needle.trim().toLowerCase();
  if (!q) return null;
  const hits: number[] = [];
  labels.forEach((label, i) => { if (label.toLowerCase().includes(q)) hits.push(i); });
  if (!hits.length) return { row: -1, rank: 0, count: 0 };
  let after = -1;
  if (step > 0) after = hits.findIndex((r) => r > from);
  else for (let i = hits.length - 1; i >= 0 && after < 0; i--) if ((hits[i] as number) < from) after = i;
  const at = after >= 0 ? after : step > 0 ? 0 : hits.length - 1; // wrap around
  return { row: hits[at] as number, rank: at + 1, count: hits.length };
}

/** The search box and its count; `go` locks the found row, `current` is the locked row (-1: none). */
export function tokenSearch(L: Listeners, labels: () => readonly string[], current: () => number, go: (row: number) => void): HTMLElement {
  const box = h("span", "attnscope-scalebox");
  const input = h("input", "attnscope-input", { type: "search", placeholder: "find token", "aria-label": "Find a token", "data-testid": "head-search", title: "Enter: next match · Shift+Enter: previous" });
  const count = h("span", "attnscope-hint", { "data-testid": "head-search-count", "aria-live": "polite" });
  L.on<KeyboardEvent>(input, "keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    const found = findToken(labels(), input.value, current(), e.shiftKey ? -1 : 1);
    if (!found) { count.textContent = ""; return; }
    count.textContent = found.count ? `${found.rank} of ${found.count}` : "no match";
    if (found.row >= 0) go(found.row);
  });
  L.on(input, "input", () => { count.textContent = ""; });
  box.append(input, count);
  return box;
}
