// Each chunk is checked against its key's kind before any view reads it (issue 40: saved widget
// state is untrusted input; docs/protocol.md, "Chunks"). The arrays a kind must hold, their
// dtypes and their shapes follow from the key and from `_meta` (already checked by
// validate_meta.ts); a chunk that differs becomes an error naming why, which the views show as
// a message, never an uncaught throw or a view drawn from the wrong numbers. Embedded chunks are
// checked on their specs before anything is inflated (js/saved.ts), so their size follows `_meta`.
import { isolate } from "../label_text";
import { parseChunkKey, type ParsedKey } from "./keys";
import type { Chunk, DType, Meta, StreamMeta } from "./types";

/** What a check reads of an array: a spec before inflating, or a decoded array. */
export interface ArrayShape { name: string; dtype: DType | null; shape: readonly number[] }

/** A dimension: exactly this size, or any size in [min, max]. */
type Dim = number | readonly [number, number];

interface Want { dtypes: readonly DType[]; dims: readonly Dim[]; optional?: boolean }

const F32: readonly DType[] = ["f32"];
const U8: readonly DType[] = ["u8"];
const INDEX: readonly DType[] = ["u16", "u32"];

/** The top keys of `heads` × `rows` queries (top:, pseudo:): dense rows when there is no `index`. */
function topWants(sm: StreamMeta, heads: Dim, rows: Dim, bytes: readonly DType[], dense: boolean): Record<string, Want> {
  const slots: Dim = dense ? sm.k_len : [1, sm.top_k];
  return {
    weight: { dtypes: bytes, dims: [heads, rows, slots] },
    ...(dense ? {} : { index: { dtypes: INDEX, dims: [heads, rows, slots] } }),
    rowmax: { dtypes: F32, dims: [heads, rows] },
  };
}

/** Rows of a `top:` or `pseudo:` block from `first` on (the page may not offer blocks: any size then). */
function blockRows(sm: StreamMeta, first: number): Dim {
  if (first >= sm.q_len) return 0;
  return sm.top_block ? Math.min(sm.top_block, sm.q_len - first) : [1, sm.q_len - first];
}

/** The arrays a chunk of `key` must hold, by name; null for a kind with no fixed arrays. */
function wants(meta: Meta, p: ParsedKey, sm: StreamMeta, names: ReadonlySet<string>): Record<string, Want> | string | null {
  const L = sm.layers.length, H = sm.num_heads, Q = sm.q_len, K = sm.k_len;
  const diff = p.side === "diff";
  const bytes: readonly DType[] = diff ? ["i8"] : U8;
  switch (p.kind) {
    case "thumbs": {
      const g = meta.generation;
      const [rows, cols]: [Dim, Dim] = p.firstRow === null ? [sm.thumb_rows, sm.thumb_cols]
        : g && g.prompt_length === p.firstRow ? [g.thumb_rows, g.thumb_cols] : [[1, sm.thumb_rows], [1, sm.thumb_cols]];
      return { thumbs: { dtypes: bytes, dims: [L, H, rows, cols] }, ...(diff ? { absmax: { dtypes: F32, dims: [L, H] } } : {}) };
    }
    case "top":
      return topWants(sm, H, p.firstRow === null ? Q : blockRows(sm, p.firstRow), bytes, !names.has("index") && sm.top_k === K);
    case "pseudo": {
      const heads: Dim = sm.pseudo_heads?.length ? sm.pseudo_heads.length : [1, 2];
      const dense = !names.has("index") && sm.top_k === K;
      return p.firstRow === null ? topWants(sm, heads, Q, bytes, dense) : topWants(sm, 1, 1, bytes, dense);
    }
    case "attn":
      return { weight: { dtypes: bytes, dims: [Q, K] }, rowmax: { dtypes: F32, dims: [Q] } };
    case "qk": {
      const D: Dim = sm.head_dim ?? [1, 2 ** 14];
      const one = { dtypes: F32, dims: [1], optional: true };
      return {
        q: { dtypes: F32, dims: [Q, D] }, k: { dtypes: F32, dims: [K, D] },
        scaling: { dtypes: F32, dims: [1] }, kv_head: { dtypes: ["u32"], dims: [1] },
        bias: { dtypes: F32, dims: [Q, K], optional: true }, mask: { dtypes: U8, dims: [Q, K], optional: true },
        spans: { dtypes: ["u32"], dims: [Q, 2], optional: true }, softcap: one, sink: one,
        rowmax: { dtypes: F32, dims: [Q], optional: true },
      };
    }
    case "stats":
      return Object.fromEntries([...names].map((n) => [n, { dtypes: F32, dims: [L, H] }]));
    case "tile":
      return { tile: { dtypes: U8, dims: [256, 256] } };
    case "pixels": {
      if (!meta.images) return "the widget has no images";
      return Object.fromEntries(meta.images.images.map((im, i) => [`image${i}`, { dtypes: U8, dims: [im.height, im.width, 3] }]));
    }
    case "image": {
      if (!meta.images) return "the widget has no images";
      const R = meta.images.queries.length;
      const C = meta.images.images.reduce((n, im) => n + im.grids.reduce((m, g) => m + g.positions.length, 0), 0);
      return { weight: { dtypes: U8, dims: [H, R, C] }, rowmax: { dtypes: F32, dims: [H, R] } };
    }
    case "segments": {
      if (!meta.segments) return "the widget has no segments";
      const S = meta.segments.edges.length - 1;
      return { mass: { dtypes: F32, dims: [H, S, S] } };
    }
    case "vnorm":
      return { norm: { dtypes: F32, dims: [H, K] }, rowsum: { dtypes: F32, dims: [H, Q] } };
    default:
      return null;
  }
}

const dimText = (d: Dim): string => (typeof d === "number" ? String(d) : `${d[0]}..${d[1]}`);
const fits = (n: number | undefined, d: Dim): boolean => n !== undefined && (typeof d === "number" ? n === d : n >= d[0] && n <= d[1]);

/** The key's place in its stream: layer and head within the stream's. */
function placeProblem(p: ParsedKey, sm: StreamMeta): string | null {
  if (p.layer !== null && p.layer >= sm.layers.length) return `layer ${p.layer} is past the stream's ${sm.layers.length} layers`;
  if (p.head !== null && p.head >= sm.num_heads) return `head ${p.head} is past the stream's ${sm.num_heads} heads`;
  return null;
}

/**
 * Why arrays named `arrays` cannot be the chunk `key` of a widget with `meta` (a missing or
 * renamed array, another dtype, a shape other than `_meta` gives), or null when they can.
 */
export function arraysProblem(meta: Meta, key: string, arrays: readonly ArrayShape[]): string | null {
  const p = parseChunkKey(key);
  if (!p) return null; // not a chunk key: nothing asks for it
  const sm = meta.streams[p.stream];
  if (!sm) return `the widget has no stream ${JSON.stringify(p.stream)}`;
  const place = placeProblem(p, sm);
  if (place) return place;
  const byName = new Map(arrays.map((a) => [a.name, a]));
  const want = wants(meta, p, sm, new Set(byName.keys()));
  if (typeof want === "string") return want;
  if (!want) return null;
  for (const [name, w] of Object.entries(want)) {
    const a = byName.get(name);
    if (!a) {
      if (w.optional) continue;
      return `it has no array "${name}" (it has ${arrays.length ? arrays.map((x) => `"${x.name}"`).join(", ") : "none"})`;
    }
    if (a.dtype === null || !w.dtypes.includes(a.dtype)) return `its array "${name}" is ${String(a.dtype)}, not ${w.dtypes.join(" or ")}`;
    const shape = Array.isArray(a.shape) ? a.shape : [];
    if (shape.length !== w.dims.length || !w.dims.every((d, i) => fits(shape[i], d))) {
      return `its array "${name}" has shape (${shape.join(", ")}) where _meta gives (${w.dims.map(dimText).join(", ")})`;
    }
  }
  return null;
}

/** Index-like values the views follow (top keys, spans): each within the stream's keys. */
function valuesProblem(meta: Meta, key: string, c: Chunk): string | null {
  const p = parseChunkKey(key);
  const sm = p ? meta.streams[p.stream] : undefined;
  if (!p || !sm) return null;
  const within = (name: string, limit: number): string | null => {
    const data = c.arrays[name]?.data;
    if (!data) return null;
    for (let i = 0; i < data.length; i++) {
      if (!((data[i] as number) <= limit)) return `its array "${name}" holds ${String(data[i])}, past the stream's ${sm.k_len} keys`;
    }
    return null;
  };
  if (p.kind === "top" || p.kind === "pseudo") return within("index", sm.k_len - 1);
  if (p.kind === "qk") return within("spans", sm.k_len);
  return null;
}

const BIDI_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * A message that may quote the notebook's own text (an array's name, a dtype): isolated
 * (FSI … PDI) when it holds a bidi control, so it cannot reorder the words after it.
 */
export const contained = (message: string): string => (BIDI_CONTROL.test(message) ? isolate(message) : message);

/** `chunk` when it is what its key and `meta` say, else the chunk as an error saying why. */
export function checkChunk(meta: Meta, chunk: Chunk): Chunk {
  if (chunk.error) return chunk;
  const arrays = Object.entries(chunk.arrays).map(([name, a]) => ({ name, dtype: a.dtype, shape: a.shape }));
  const problem = arraysProblem(meta, chunk.key, arrays) ?? valuesProblem(meta, chunk.key, chunk);
  return problem ? { key: chunk.key, arrays: {}, error: `it does not match the widget's _meta: ${contained(problem)}` } : chunk;
}
