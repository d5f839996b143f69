// The neuron view's "why" panel: the selected (query, key)'s score split into the sources
// that wrote q_i and k_j (attnscope.qk_sources, normalisers frozen): the largest query-side
// and key-side sources and pairs as bars, the rest as "other". A source head or MLP is a
// button that opens it in the head view at the position it wrote (the query's or the key's),
// so "this head looks at j because that earlier head at j looked at j−1" is two clicks.
// Chunks: `why:` (one pair, computed live by the kernel or embedded in a saved page) and
// `whys:` (the pairs a page holds, listed when the pair shown is not one of them).
import { hex } from "../../colors";
import { arr } from "../../data";
import { labelElement } from "../../label_text";
import { whyKey, whysKey } from "../../wire/keys";
import type { AppState, Chunk, Meta, StreamMeta } from "../../wire/types";
import { fmt, h, type Listeners } from "../common";
import { queryIdx, st, streamNow, type NeuronView } from "./neuron_state";

/** Bars each column names one by one; the rest is "other". */
export const SHOWN = 6;

/** One source or pair and its share of the score. */
export interface Part { name: string; value: number; side: "query" | "key" | "pair"; names: string[] }

/** A `why:` chunk read: the sources of each side with their totals, the largest pairs, the score. */
export interface WhySplit { query: Part[]; key: Part[]; pairs: Part[]; score: number }

/** A `why:` chunk's arrays as parts (docs/protocol.md, "The why panel"). */
export function readWhy(c: Chunk): WhySplit {
  const names = new TextDecoder().decode(arr(c, "names").data as Uint8Array).split("\n");
  const q = arr(c, "query").data as Float32Array, k = arr(c, "key").data as Float32Array;
  const pi = arr(c, "pair_index").data as Uint32Array, pv = arr(c, "pair").data as Float32Array;
  const qn = names.slice(0, q.length), kn = names.slice(q.length);
  return {
    query: Array.from(q, (value, i) => ({ name: qn[i] ?? "?", value, side: "query" as const, names: [qn[i] ?? "?"] })),
    key: Array.from(k, (value, i) => ({ name: kn[i] ?? "?", value, side: "key" as const, names: [kn[i] ?? "?"] })),
    pairs: Array.from(pv, (value, i) => {
      const a = qn[pi[2 * i] as number] ?? "?", b = kn[pi[2 * i + 1] as number] ?? "?";
      return { name: `${a} · ${b}`, value, side: "pair" as const, names: [a, b] };
    }),
    score: (arr(c, "score").data as Float32Array)[0] ?? 0,
  };
}

/** The `shown` largest parts by size, and what the others add up to (with how many they are). */
export function largest(parts: readonly Part[], total: number, shown = SHOWN): { top: Part[]; other: number; others: number } {
  const top = [...parts].sort((a, b) => Math.abs(b.value) - Math.abs(a.value)).slice(0, shown);
  const sum = top.reduce((s, p) => s + p.value, 0);
  return { top, other: total - sum, others: Math.max(0, parts.length - top.length) };
}

/** Where a source name points: a head (`L3H7`) or an MLP (`L3.mlp`) of a model layer, else null. */
export function sourcePlace(name: string): { layer: number; head: number | null } | null {
  const head = /^L(\d+)H(\d+)$/.exec(name);
  if (head) return { layer: Number(head[1]), head: Number(head[2]) };
  const mlp = /^L(\d+)\.mlp$/.exec(name);
  return mlp ? { layer: Number(mlp[1]), head: null } : null;
}

/** The selection a click on source `name` sets: its layer (and head) in the head view, at `at`; null when it is no layer's. */
export function jumpTo(name: string, at: number, sm: StreamMeta): Partial<AppState> | null {
  const place = sourcePlace(name);
  const layer = place ? sm.layers.indexOf(place.layer) : -1;
  if (!place || layer < 0) return null;
  return place.head === null ? { view: "head", layer, query: at } : { view: "head", layer, heads: [place.head], head: place.head, query: at };
}

/** The panel shows: one trace's self-attention with q and k. */
export const offersWhy = (meta: Meta, stream: string): boolean =>
  !meta.comparison && Object.keys(meta.streams).length === 1 && meta.streams[stream]?.head_dim != null;

/** What the panel needs from the neuron view each draw. */
export interface WhyInput {
  meta: Meta;
  state: AppState;
  sm: StreamMeta;
  query: number;
  /** The key shown: the selected one, else the strongest (null while the rows load). */
  key: number | null;
  /** The key was not selected: the panel says it took the strongest. */
  strongest: boolean;
  labelQ: (i: number) => string;
  labelK: (j: number) => string;
  pos: string;
  neg: string;
}

/** The panel: mounted once, `show` each draw; it asks for its chunks itself. */
export function whyPanel(parent: HTMLElement, before: HTMLElement | null, L: Listeners, data: { request(keys: string[]): Promise<Map<string, Chunk>>; peek(key: string): Chunk | undefined }, set: (p: Partial<AppState>) => void, redraw: () => void): { show: (w: WhyInput) => void; el: HTMLElement } {
  const el = h("section", "attnscope-why", { "data-testid": "why-panel", "aria-label": "Why this weight: the score split into its sources" });
  const title = h("div", "attnscope-why-title", { "data-testid": "why-title" });
  const body = h("div", "attnscope-why-cols");
  const note = h("div", "attnscope-hint attnscope-why-note", { "data-testid": "why-note" });
  el.append(title, body, note);
  parent.insertBefore(el, before);
  const got = new Map<string, Chunk>(); // answers, errors included (the chunk source keeps no errors)
  const asked = new Set<string>();
  const fetch = (key: string): Chunk | null => {
    const c = data.peek(key) ?? got.get(key);
    if (c) return c;
    if (!asked.has(key)) {
      asked.add(key);
      data.request([key]).then((m) => { const a = m.get(key); if (a) got.set(key, a); redraw(); }).catch(() => undefined);
    }
    return null;
  };
  let jumps: Partial<AppState>[] = [];
  L.on(el, "click", (e) => {
    const b = (e.target as HTMLElement).closest?.("[data-jump]") as HTMLElement | null;
    const to = b ? jumps[Number(b.dataset.jump)] : undefined;
    if (to) set(to);
  });
  let drawn = "";

  const show = (w: WhyInput): void => {
    el.hidden = !offersWhy(w.meta, w.state.stream);
    if (el.hidden || w.key === null) return;
    const { state: s, sm, query, key } = w;
    const k = whyKey(s.stream, s.layer, s.head, query, key);
    const chunk = fetch(k);
    const index = chunk?.error ? fetch(whysKey(s.stream)) : null;
    const sig = `${k}|${chunk ? (chunk.error ?? "ok") : "wait"}|${index ? "index" : ""}|${w.pos}|${w.strongest}`;
    if (sig === drawn) return;
    drawn = sig;
    jumps = [];
    const layerNo = sm.layers[s.layer] ?? s.layer;
    title.replaceChildren(`Why head ${s.head} of layer ${layerNo} at “`, labelElement(w.labelQ(query)), `” (#${query}) attends to “`, labelElement(w.labelK(key)), `” (#${key})${w.strongest ? ", its strongest key (click a key to choose another)" : ""}`);
    el.dataset.pair = `${s.layer}:${s.head}:${query}:${key}`;
    if (!chunk) {
      body.replaceChildren();
      note.textContent = "Splitting the score into its sources (one forward pass in the kernel)…";
      el.dataset.state = "loading";
      return;
    }
    if (chunk.error) {
      body.replaceChildren();
      el.dataset.state = "error";
      note.replaceChildren(chunk.error, ...heldPairs(w, index));
      return;
    }
    const split = readWhy(chunk);
    el.dataset.state = "ready";
    el.dataset.score = String(split.score);
    body.replaceChildren(
      column(`query side: what wrote q at #${query}`, split.query, split.score, query, w),
      column(`key side: what wrote k at #${key}`, split.key, split.score, key, w),
      column("pairs: query source · key source", split.pairs, split.score, -1, w, split.query.length * split.key.length),
    );
    note.textContent = `score ${fmt(split.score)} = Σ over pairs of scale × q_source · k_source, with LayerNorm/RMSNorm and q/k-norm frozen at their forward values and RoPE per source (attnscope.qk_sources); a side's bars sum the pairs it is in. Heads and MLPs open in the head view.`;
  };

  /** The pairs a saved page holds, as buttons that show them (none where the kernel answers). */
  const heldPairs = (w: WhyInput, index: Chunk | null): (string | Node)[] => {
    const pairs = index && !index.error ? (arr(index, "pairs").data as Uint32Array) : null;
    if (!pairs?.length) return [];
    const out: (string | Node)[] = [" Split in the notebook: "];
    for (let i = 0; i + 3 < pairs.length; i += 4) {
      const [layer, head, query, key] = [0, 1, 2, 3].map((o) => pairs[i + o] as number) as [number, number, number, number];
      const b = h("button", "attnscope-link", { type: "button", "data-jump": String(jumps.length), "data-testid": "why-held" });
      b.append(`layer ${w.sm.layers[layer] ?? layer} head ${head}: “`, labelElement(w.labelQ(query)), "” → “", labelElement(w.labelK(key)), "”");
      jumps.push({ layer, head, heads: [head], query, key });
      out.push(b, " ");
    }
    return out;
  };

  /** A column of bars; `count` is how many parts there are in all (a chunk names only the largest pairs). */
  const column = (heading: string, parts: Part[], total: number, at: number, w: WhyInput, count = parts.length): HTMLElement => {
    const col = h("div", "attnscope-why-col");
    const head = h("div", "attnscope-why-heading");
    head.textContent = heading;
    col.append(head);
    const { top, other } = largest(parts, total);
    const others = Math.max(0, count - top.length);
    const scale = Math.max(Math.abs(other), ...top.map((p) => Math.abs(p.value)), 1e-30);
    for (const p of top) col.append(bar(p, scale, at, w));
    if (others > 0 || Math.abs(other) > 1e-6 * scale) col.append(bar({ name: `other (${others})`, value: other, side: "pair", names: [] }, scale, -1, w, true));
    return col;
  };

  const bar = (p: Part, scale: number, at: number, w: WhyInput, other = false): HTMLElement => {
    const row = h("div", `attnscope-why-row${other ? " is-other" : ""}`, { "data-testid": "why-row", "data-source": p.name, "data-value": String(p.value) });
    const label = h("span", "attnscope-why-name");
    p.names.forEach((name, i) => {
      if (i) label.append(" · ");
      // In a pair the first name wrote q (at the query), the second k (at the key).
      const where = p.side === "pair" ? (i === 0 ? w.query : (w.key ?? -1)) : at;
      const to = where >= 0 ? jumpTo(name, where, w.sm) : null;
      if (!to) { label.append(name); return; }
      const b = h("button", "attnscope-link", { type: "button", "data-jump": String(jumps.length), title: `Open ${name} in the head view at #${to.query}` });
      b.textContent = name;
      jumps.push(to);
      label.append(b);
    });
    if (!p.names.length) label.textContent = p.name;
    const track = h("span", "attnscope-why-track");
    const fill = h("span", "attnscope-why-bar");
    fill.style.width = `${((Math.abs(p.value) / scale) * 100).toFixed(1)}%`;
    fill.style.background = p.value < 0 ? w.neg : w.pos;
    track.append(fill);
    const num = h("span", "attnscope-why-num");
    num.textContent = fmt(p.value);
    row.append(label, track, num);
    return row;
  };

  return { show, el };
}

/** The panel's input from the neuron view: its pair (the strongest key until one is clicked), labels, colours. */
export function whyInputOf(n: NeuronView): WhyInput {
  const s = st(n), sm = streamNow(n), query = queryIdx(n);
  let key: number | null = s.key != null && s.key >= 0 && s.key < sm.k_len && !n.rows?.masked[s.key] ? s.key : null;
  const strongest = key === null;
  if (key === null && n.rows) {
    let best = -1;
    n.rows.weight.forEach((v, j) => { if (!n.rows?.masked[j] && (best < 0 || v > (n.rows?.weight[best] ?? 0))) best = j; });
    key = best >= 0 ? best : null;
  }
  return {
    meta: n.ctx.meta, state: s, sm, query, key, strongest,
    labelQ: (i) => n.sideQ.labels[i] ?? String(i), labelK: (j) => n.sideK.labels[j] ?? String(j),
    pos: hex(n.theme.pos), neg: hex(n.theme.neg),
  };
}
