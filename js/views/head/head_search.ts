// The find box of the head view and the overview: type a word or a phrase, Enter jumps
// to the next place the text has it (Shift+Enter: the previous one), so a long input's
// "needle" is one keystroke away. Words are found across word pieces ("warranty" in
// `warrant ·y`), case-insensitive, and the whole span is marked; the "tokens" mode
// finds the token labels that hold the text, as before. The match's first token becomes
// the locked query, which scrolls into view.
import { PIECE_MARK } from "../../tokens";
import { h, type Listeners } from "../common";

/** Rows `from..to` (inclusive) that a search matched. */
export interface Span { from: number; to: number }

/** What the search reads of a side: its labels and which continue the word before them. */
export interface Searchable { labels: readonly string[]; continues: readonly boolean[] }

export type FindMode = "words" | "tokens";

/** A side's text as words: pieces joined, words by one space; `owner[c]` is the row of character `c` (-1: a space between words). */
export function sideText(side: Searchable): { text: string; owner: Int32Array } {
  const parts: string[] = [];
  const owners: number[] = [];
  side.labels.forEach((label, row) => {
    const piece = label.startsWith(PIECE_MARK) ? label.slice(PIECE_MARK.length) : label;
    const word = piece.replace(/\s+/g, " ").trim().toLowerCase();
    if (!word) return;
    if (parts.length && !side.continues[row]) { parts.push(" "); owners.push(-1); }
    parts.push(word);
    for (let c = 0; c < word.length; c++) owners.push(row);
  });
  return { text: parts.join(""), owner: Int32Array.from(owners) };
}

/** Every span of rows holding `needle` (words mode: across pieces and words; tokens: one label each), in order. */
export function findSpans(side: Searchable, needle: string, mode: FindMode = "words"): Span[] {
  const q = needle.replace(/\s+/g, " ").trim().toLowerCase();
  if (!q) return [];
  if (mode === "tokens") {
    const rows: Span[] = [];
    side.labels.forEach((label, i) => { if (label.toLowerCase().includes(q)) rows.push({ from: i, to: i }); });
    return rows;
  }
  const { text, owner } = sideText(side);
  const spans: Span[] = [];
  for (let at = text.indexOf(q); at >= 0; at = text.indexOf(q, at + 1)) {
    let a = at, b = at + q.length - 1;
    while ((owner[a] as number) < 0) a++; // a needle starting or ending with a space: the words inside
    while ((owner[b] as number) < 0) b--;
    const span = { from: owner[a] as number, to: owner[b] as number };
    const last = spans[spans.length - 1];
    if (!last || last.from !== span.from) spans.push(span); // "aa" in "aaa": one place per first row
  }
  return spans;
}

/** The `step`-th match (1: next, -1: previous) around row `from`, its rank and how many there are. */
export function findMatch(side: Searchable, needle: string, from: number, step: 1 | -1 = 1, mode: FindMode = "words"): { span: Span; rank: number; count: number } | null {
  if (!needle.trim()) return null;
  const spans = findSpans(side, needle, mode);
  if (!spans.length) return { span: { from: -1, to: -1 }, rank: 0, count: 0 };
  let after = -1;
  if (step > 0) after = spans.findIndex((s) => s.from > from);
  else for (let i = spans.length - 1; i >= 0 && after < 0; i--) if ((spans[i] as Span).from < from) after = i;
  const at = after >= 0 ? after : step > 0 ? 0 : spans.length - 1; // wrap around
  return { span: spans[at] as Span, rank: at + 1, count: spans.length };
}

/** `findMatch` in tokens mode over bare labels, as the row it starts at (the token search). */
export function findToken(labels: readonly string[], needle: string, from: number, step: 1 | -1 = 1): { row: number; rank: number; count: number } | null {
  const found = findMatch({ labels, continues: labels.map(() => false) }, needle, from, step, "tokens");
  return found && { row: found.span.from, rank: found.rank, count: found.count };
}

/**
 * The search box, its mode (words or tokens) and its count; `go` locks the found span's
 * first row and marks the span, `current` is the locked row (-1: none).
 */
export function tokenSearch(L: Listeners, side: () => Searchable, current: () => number, go: (span: Span) => void): HTMLElement {
  const box = h("span", "attnscope-scalebox attnscope-find");
  const input = h("input", "attnscope-input attnscope-find-input", { type: "search", placeholder: "find word or phrase", "aria-label": "Find a word or phrase", "data-testid": "head-search", title: "Enter: next match · Shift+Enter: previous (case-insensitive; words are found across word pieces)" });
  const mode = h("select", "attnscope-select", { "aria-label": "Find words or tokens", "data-testid": "head-search-mode", title: "words: across word pieces and spaces · tokens: token labels holding the text" });
  for (const [value, label] of [["words", "words"], ["tokens", "tokens"]] as const) {
    const o = h("option", "", { value });
    o.textContent = label;
    mode.append(o);
  }
  const count = h("span", "attnscope-hint", { "data-testid": "head-search-count", "aria-live": "polite" });
  L.on<KeyboardEvent>(input, "keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    const found = findMatch(side(), input.value, current(), e.shiftKey ? -1 : 1, mode.value as FindMode);
    if (!found) { count.textContent = ""; return; }
    count.textContent = found.count ? `${found.rank} of ${found.count}` : "no match";
    box.dataset.found = found.count ? `${found.span.from}-${found.span.to}` : "";
    if (found.count) go(found.span);
  });
  const reset = (): void => { count.textContent = ""; };
  L.on(input, "input", reset);
  L.on(mode, "change", reset);
  box.append(input, mode, count);
  return box;
}
