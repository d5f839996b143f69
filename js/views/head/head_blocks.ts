// The head view's rows of one layer, loaded a block of query rows at a time
// (`top:<stream>:<layer>:<first row>`, docs/protocol.md) or whole. A layer
// switch at thousands of tokens then asks Python for the screenful of rows the
// view draws, not for every row of the layer. No DOM: tests/js/head_blocks.test.ts.
import { topBlockKey, topKey } from "../../wire/keys";
import type { Chunk, DataSource, StreamMeta, TypedArray } from "../../wire/types";
import { topRowsOf, type TopRows } from "./head_lines";

/** Query rows `[first, last]`, both included (token indices, not display rows). */
export type RowRange = readonly [number, number];

/** Rows per block the view asks for, or 0 when it reads whole-layer chunks (one block would hold them all, or the page embeds whole layers). */
export function blockRowsOf(sm: StreamMeta): number {
  const block = sm.top_block ?? 0;
  return block > 0 && block < sm.q_len ? block : 0;
}

/** The first rows of the blocks holding any row of `ranges` (clamped to `0 .. queries - 1`), ascending. */
export function blocksOf(ranges: readonly RowRange[], block: number, queries: number): number[] {
  const firsts = new Set<number>();
  for (const [a, b] of ranges) {
    const lo = Math.max(0, a), hi = Math.min(queries - 1, b);
    for (let first = lo - (lo % block); first <= hi; first += block) firsts.add(first);
  }
  return [...firsts].sort((x, y) => x - y);
}

/** Blocks worth fetching before they are needed: the one before and the one after each run of `needed` (scrolling either way). */
export function blocksAhead(needed: readonly number[], block: number, queries: number): number[] {
  const want = new Set<number>();
  const has = new Set(needed);
  for (const first of needed) {
    for (const next of [first - block, first + block]) if (next >= 0 && next < queries && !has.has(next)) want.add(next);
  }
  return [...want].sort((x, y) => x - y);
}

/**
 * Query rows that display rows `first .. last` stand for: a display row is a
 * token, or in words mode (`starts`: the first token of each word) every token
 * of its word, so a word's pieces are all loaded before it is drawn.
 */
export function tokenRange(first: number, last: number, starts: readonly number[] | null, queries: number): RowRange {
  if (!starts) return [first, Math.min(last, queries - 1)];
  const lo = starts[first] ?? queries;
  const next = starts[last + 1];
  return [lo, next === undefined ? queries - 1 : next - 1];
}

export interface LayerRows {
  /** Show `layer` of `stream` (a new one starts empty; the same one keeps its rows). */
  show(stream: string, layer: number, sm: StreamMeta): void;
  /**
   * Whether every row of `ranges` is loaded. Asks for the blocks it lacks (each
   * once: a failed one waits for the next `show` of another layer) and, once it
   * has them, for the blocks just beyond; `onChange` runs when rows arrive.
   */
  need(ranges: readonly RowRange[]): boolean;
  /** The layer's rows in the `top:` form; rows not loaded are empty (rowmax 0). Null before any arrive. */
  rows(): TopRows | null;
  /** Changes whenever `rows()` does (for caches of what is computed from them). */
  signature(): string;
  /** Changes with the layer shown (not as its rows arrive): `loaded` ranges are kept until it does. */
  epoch(): string;
  /** The query rows `[first, end)` in `rows()`, in the order they arrived (the whole layer once it is in). */
  loaded(): readonly (readonly [number, number])[];
  /** The key and error of a chunk that failed, or null. */
  error(): { key: string; error: string } | null;
  /** Ask for the rows of `ranges` in other layers, for a switch to one (nothing waits on them). */
  prefetchLayers(layers: readonly number[], ranges: readonly RowRange[]): void;
}

interface Assembly {
  index: TypedArray | null;
  weight: TypedArray;
  rowmax: Float32Array;
  slots: number;
  full: number;
}

/** A zeroed array of `a`'s type, `n` long. */
function like(a: TypedArray, n: number): TypedArray {
  return new (a.constructor as new (n: number) => TypedArray)(n);
}

export function layerRows(data: DataSource, onChange: () => void): LayerRows {
  let stream = "", layer = -1, queries = 0, heads = 0, block = 0, topK = 0;
  let whole: Chunk | null = null;
  let assembly: Assembly | null = null;
  let have = new Set<number>();
  let arrived: [number, number][] = [];
  let asked = new Set<number>();
  /** Blocks a fetch ahead of need was refused (a page that holds only some): not asked ahead again. */
  let refused = new Set<number>();
  let failed: { key: string; error: string } | null = null;
  let rev = 0;
  let generation = 0; // a new layer: answers for the old one are dropped

  const blockKey = (first: number): string => topBlockKey(stream, layer, first);

  /** Copy a block's rows into the layer's arrays. */
  function adopt(first: number, c: Chunk): void {
    const t = topRowsOf(c, 0, topK);
    const rows = c.arrays.rowmax?.shape[1] ?? 0;
    if (!assembly) {
      assembly = {
        index: t.index ? like(t.index as TypedArray, heads * queries * t.slots) : null,
        weight: like(t.weight as TypedArray, heads * queries * t.slots),
        rowmax: new Float32Array(heads * queries),
        slots: t.slots,
        full: t.full ?? 255,
      };
    }
    const a = assembly, T = a.slots;
    for (let hd = 0; hd < heads; hd++) {
      const from = hd * rows, to = hd * queries + first;
      a.weight.set((t.weight as TypedArray).subarray(from * T, (from + rows) * T), to * T);
      if (a.index && t.index) a.index.set((t.index as TypedArray).subarray(from * T, (from + rows) * T), to * T);
      a.rowmax.set((t.rowmax as Float32Array).subarray(from, from + rows), to);
    }
    have.add(first);
    arrived.push([first, Math.min(queries, first + rows)]);
    rev++;
  }

  /** Ask for blocks `firsts`; `wait`: a draw needs them, and a failure is kept and shown. */
  function fetch(firsts: readonly number[], wait: boolean): void {
    const want = new Map<string, number>();
    for (const first of firsts) {
      if (have.has(first) || asked.has(first) || (!wait && refused.has(first))) continue;
      const cached = data.peek(blockKey(first));
      if (cached && !cached.error) { adopt(first, cached); continue; }
      asked.add(first);
      want.set(blockKey(first), first);
    }
    if (!want.size) return;
    const gen = generation;
    void data.request([...want.keys()]).then((got) => {
      if (gen !== generation) return;
      for (const [key, first] of want) {
        const c = got.get(key);
        if (c && !c.error) { adopt(first, c); continue; }
        asked.delete(first); // a block fetched ahead is asked for again when a draw needs it
        if (!wait) refused.add(first); // ... and not ahead again: each draw would ask once more
        if (wait && !failed) failed = { key, error: c?.error ?? "missing" };
      }
      onChange();
    }).catch(() => undefined);
  }

  return {
    show(s, l, sm) {
      if (s === stream && l === layer) return;
      stream = s; layer = l; queries = sm.q_len; heads = sm.num_heads; topK = sm.top_k;
      block = blockRowsOf(sm);
      whole = null; assembly = null; failed = null;
      have = new Set(); arrived = []; asked = new Set(); refused = new Set();
      generation++; rev++;
      if (!block) {
        const key = topKey(s, l);
        const cached = data.peek(key);
        if (cached) { whole = cached; if (cached.error) failed = { key, error: cached.error }; return; }
        const gen = generation;
        void data.request([key]).then((m) => {
          if (gen !== generation) return;
          whole = m.get(key) ?? { key, arrays: {}, error: "missing" };
          if (whole.error) failed = { key, error: whole.error };
          rev++;
          onChange();
        }).catch(() => undefined);
      }
    },
    need(ranges) {
      if (!block) return !!whole && !whole.error;
      const needed = blocksOf(ranges, block, queries);
      const missing = needed.filter((f) => !have.has(f));
      if (missing.length) {
        if (!failed) fetch(missing, true);
        return missing.every((f) => have.has(f)); // blocks already in the data cache arrive at once
      }
      fetch(blocksAhead(needed, block, queries), false);
      return true;
    },
    rows() {
      if (!block) return whole && !whole.error ? topRowsOf(whole, queries, topK) : null;
      const a = assembly;
      if (!a) return null;
      return { index: a.index, weight: a.weight, rowmax: a.rowmax, queries, slots: a.slots, full: a.full };
    },
    signature: () => `${topKey(stream, layer)}#${rev}`,
    epoch: () => `${topKey(stream, layer)}@${generation}`,
    loaded: () => (block ? arrived : whole && !whole.error ? [[0, queries]] : []),
    error: () => failed,
    prefetchLayers(others, ranges) {
      const firsts = block ? blocksOf(ranges, block, queries) : [];
      const keys = others.flatMap((l) => (block ? firsts.map((f) => topBlockKey(stream, l, f)) : [topKey(stream, l)]));
      if (keys.length) void data.request(keys).catch(() => undefined);
    },
  };
}
