// The head view's analysis: pseudo-heads (mean, rollout), several queries
// summed, words instead of pieces, hidden first/special tokens, the log scale.
// Its toolbar controls, the rows the view shows (words or tokens) and the
// pipeline from chunks to the rows the lines are drawn from; the arithmetic is
// in head_transform.ts.
import { keySide, PIECE_MARK, querySide, type Side } from "../../tokens";
import type { AppState, Meta, Selection, Store, StreamMeta } from "../../wire/types";
import { h, type Listeners } from "../common";
import { VALUE_WEIGHT_LABEL, VALUE_WEIGHT_LEGEND, valueWeighted, type ValueNorms } from "../value_weight";
import type { TopRows } from "./head_lines";
import {
  asTopRows, decodeTop, hideTokens, keepQueries, logScale, mergeWords, stackHeads, summedKeys, wordCount, type Rows,
} from "./head_transform";

/** The pseudo-heads' line colours: neither is in the head palette. */
export function pseudoColor(name: string, dark: boolean): string {
  if (name === "rollout") return dark ? "#FF6EC7" : "#C2185B";
  return dark ? "#F5F5F5" : "#333333";
}

const PSEUDO_LABELS: Record<string, string> = { mean: "mean", rollout: "rollout" };

/** The pseudo-heads `sm` offers (none in pages written before they existed). */
export const offeredPseudo = (sm: StreamMeta): string[] => sm.pseudo_heads ?? [];

/** One side's tokens merged into words: joined labels, the first piece's kind and segment. */
export function wordSide(side: Side, words: readonly number[]): Side {
  const n = wordCount(words);
  const out: Side = {
    labels: Array<string>(n).fill(""), raw: Array<string>(n).fill(""), kinds: [],
    continues: Array<boolean>(n).fill(false), segments: side.segments ? [] : null,
  };
  words.forEach((w, i) => {
    const label = side.labels[i] ?? "";
    // A word is written whole: its pieces lose the mark that says they continue it.
    out.labels[w] += side.continues[i] && label.startsWith(PIECE_MARK) ? label.slice(PIECE_MARK.length) : label;
    out.raw[w] = out.raw[w] ? `${out.raw[w]} ${side.raw[i] ?? ""}` : side.raw[i] ?? "";
    if (out.kinds[w] === undefined) {
      out.kinds[w] = side.kinds[i] ?? "token";
      if (out.segments && side.segments) out.segments[w] = side.segments[i] ?? 0;
    }
  });
  return out;
}

/** Where word `w` starts: the token index `query` and `queries` keep in words mode. */
export function wordStarts(words: readonly number[]): number[] {
  const starts: number[] = [];
  words.forEach((w, i) => { if (starts[w] === undefined) starts[w] = i; });
  return starts;
}

/** Tokens the "hide" switch hides: the first one (where sinks form) and every special or padding token. */
export function hiddenTokens(side: Side): Uint8Array {
  return Uint8Array.from(side.kinds, (k, i) => (i === 0 || k !== "token" ? 1 : 0));
}

/** The rows the head view shows on each side: tokens, or words with maps to and from token indices. */
export interface Display {
  tokensQ: Side;
  tokensK: Side;
  sideQ: Side;
  sideK: Side;
  /** Word of each token, or null when rows are tokens. */
  wordsQ: number[] | null;
  wordsK: number[] | null;
  startsQ: number[] | null;
  startsK: number[] | null;
}

function sideWords(meta: Meta, name: string, n: number): number[] | null {
  const words = meta.sides[name]?.words;
  return words && words.length === n ? words : null;
}

export function displayOf(meta: Meta, sm: StreamMeta, words: boolean): Display {
  const tokensQ = querySide(meta, sm), tokensK = keySide(meta, sm);
  const wordsQ = words ? sideWords(meta, sm.query_side, sm.q_len) : null;
  const wordsK = words ? sideWords(meta, sm.key_side, sm.k_len) : null;
  return {
    tokensQ, tokensK,
    sideQ: wordsQ ? wordSide(tokensQ, wordsQ) : tokensQ,
    sideK: wordsK ? wordSide(tokensK, wordsK) : tokensK,
    wordsQ, wordsK,
    startsQ: wordsQ && wordStarts(wordsQ), startsK: wordsK && wordStarts(wordsK),
  };
}

/** The row showing token `i` (its word in words mode); null stays null. */
export const rowOf = (words: number[] | null, i: number | null): number | null => (i == null ? null : words ? words[i] ?? i : i);
/** The token index a click on row `r` stands for (a word's first piece). */
export const tokenOf = (starts: number[] | null, r: number): number => (starts ? starts[r] ?? r : r);

/** The query rows whose attention is summed: the `queries` trait as display rows, distinct, when two or more. */
export function summedRows(d: Display, queries: readonly number[]): number[] {
  const rows = [...new Set(queries.map((q) => rowOf(d.wordsQ, q) as number))].sort((a, b) => a - b);
  return rows.length >= 2 ? rows : [];
}

export interface AnalysisInput {
  top: TopRows;
  heads: number;
  /** The pseudo-heads chunk's rows (every offered pseudo-head), or null when none are shown. */
  pseudo: TopRows | null;
  pseudoHeads: number;
  display: Display;
  hide: boolean;
  log: boolean;
  /** Display rows whose lines alone are drawn (several queries); [] for every row. */
  keep: readonly number[];
  /** The layer's value norms when weights are drawn weighted by them (`value_weighted`), else null. */
  values?: ValueNorms | null;
}

/** The rows to draw lines from (`lines`), and the weights before the log scale (`weights`), for sums. */
export interface Analysed { lines: TopRows; weights: Rows }

/**
 * The pipeline: weight by value norm, stack pseudo-heads, hide and renormalise, merge words,
 * keep the summed queries, log. Pseudo-heads (a mean, a rollout) have no values: they stay raw.
 */
export function analyse(a: AnalysisInput): Analysed {
  const { display: d } = a;
  const keys = d.tokensK.labels.length;
  let rows = decodeTop(a.top, a.heads, keys);
  if (a.values) rows = valueWeighted(rows, a.values);
  if (a.pseudo) rows = stackHeads(rows, decodeTop(a.pseudo, a.pseudoHeads, keys));
  if (a.hide) rows = hideTokens(rows, hiddenTokens(d.tokensQ), hiddenTokens(d.tokensK));
  if (d.wordsQ && d.wordsK) rows = mergeWords(rows, d.wordsQ, d.wordsK);
  const weights = rows;
  if (a.keep.length) rows = keepQueries(rows, a.keep);
  if (a.log) rows = logScale(rows);
  return { lines: asTopRows(rows), weights };
}

/** The summed weight over `heads` from `queries` to each key (for the key bars and the status line). */
export function sums(a: Analysed, heads: readonly number[], queries: readonly number[]): Float32Array {
  const out = new Float32Array(a.weights.keys);
  summedKeys(out, a.weights, heads, queries);
  return out;
}

/** The analysis switches in the head view's toolbar: pseudo-head toggles and three checkboxes. */
export function analysisControls(bar: HTMLElement, L: Listeners, store: Store<AppState>, offered: () => string[], hasNorms: () => boolean = () => false): {
  /** Rebuild the pseudo-head buttons for the current stream. */
  build: (dark: boolean) => void;
  /** Show the store's values. */
  sync: () => void;
  /** Say under the toolbar how the weights are drawn: value-weighted, or why not (null: nothing to say). */
  sayValues: (text: string | null) => void;
} {
  const pseudo = h("div", "attnscope-swatches attnscope-pseudo", { role: "group", "aria-label": "Pseudo-heads" });
  const box = (name: keyof Pick<Selection, "words" | "hide_special" | "log_scale" | "value_weighted">, text: string, tip: string) => {
    const label = h("label", "attnscope-check", { title: tip });
    const input = h("input", "", { type: "checkbox", "data-testid": `toggle-${name}` });
    label.append(input, document.createTextNode(text));
    L.on(input, "change", () => store.set({ [name]: input.checked } as Partial<AppState>));
    return { label, input, name };
  };
  const boxes = [
    box("words", "words", "Merge subword pieces into words (sum over key pieces, mean over query pieces)"),
    box("hide_special", "hide special", "Hide the first and special tokens and renormalise each row over the keys left"),
    box("log_scale", "log", "Opacity and bars on a log scale (0.001 to 1)"),
  ];
  const values = box("value_weighted", VALUE_WEIGHT_LABEL, `Draw each weight ${VALUE_WEIGHT_LEGEND}`);
  const legend = h("span", "attnscope-hint attnscope-value-legend", { "data-testid": "value-legend" });
  legend.hidden = true;
  bar.append(pseudo, ...boxes.map((b) => b.label), values.label, legend);
  boxes.push(values);
  L.on(pseudo, "click", (e) => {
    const b = (e.target as HTMLElement).closest?.("[data-pseudo]") as HTMLElement | null;
    const name = b?.dataset.pseudo;
    if (!name) return;
    const cur = store.get().pseudo_heads;
    const next = cur.includes(name) ? cur.filter((p) => p !== name) : offered().filter((p) => p === name || cur.includes(p));
    store.set({ pseudo_heads: next });
  });
  const sync = (): void => {
    const s = store.get();
    for (const b of pseudo.children) b.setAttribute("aria-pressed", s.pseudo_heads.includes((b as HTMLElement).dataset.pseudo ?? "") ? "true" : "false");
    for (const b of boxes) b.input.checked = s[b.name];
    values.label.hidden = !hasNorms();
  };
  const sayValues = (text: string | null): void => {
    legend.textContent = text ?? "";
    legend.hidden = !text;
  };
  const build = (dark: boolean): void => {
    pseudo.replaceChildren();
    for (const name of offered()) {
      const b = h("button", "attnscope-swatch attnscope-pseudo-swatch", { type: "button", "data-pseudo": name, "data-testid": `pseudo-${name}`, "aria-label": `Pseudo-head ${name}` });
      const color = pseudoColor(name, dark);
      b.style.setProperty("--swatch", color);
      b.style.setProperty("--swatch-fg", dark ? "#000" : "#fff");
      b.textContent = PSEUDO_LABELS[name] ?? name;
      pseudo.append(b);
    }
    pseudo.hidden = !offered().length;
    sync();
  };
  return { build, sync, sayValues };
}
