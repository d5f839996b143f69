// What a change of stream keeps of the selection: one rule, mirrored by
// src/attnscope/encode/stream_change.py, whose cases tests/fixtures/wire/stream_change.json
// holds for both test suites. It keeps what still means the same thing: the nearest
// layer and head, the selected heads the stream has (all when none is left), a query
// or key only while it names a token of the same side, the pseudo-heads offered, and
// a sentence filter only where a side has sentences.
import type { Meta, Selection, StreamMeta } from "./types";

/** What the rule reads of a stream: its `_meta.streams` entry, and whether a side has sentences. */
export type StreamShape = Pick<StreamMeta, "layers" | "num_heads" | "q_len" | "k_len" | "query_side" | "key_side" | "pseudo_heads"> & { segmented: boolean };

/** The part of the selection a stream change may move (encode/stream_change.py `CLAMPED`). */
export type StreamSelection = Pick<Selection, "layer" | "heads" | "head" | "query" | "key" | "queries" | "pseudo_heads" | "pair_filter">;

const inside = (value: number, length: number): boolean => value >= 0 && value < length;

/** The selection's fields after a change from stream `old` to `next` (the same stream: kept inside it). */
export function clampToStream(s: StreamSelection, old: StreamShape, next: StreamShape): StreamSelection {
  const heads = s.heads.filter((h) => inside(h, next.num_heads));
  const sameRows = old.query_side === next.query_side;
  const token = (v: number | null, length: number, sameSide: boolean): number | null => (v != null && sameSide && inside(v, length) ? v : null);
  const offered = next.pseudo_heads ?? [];
  return {
    layer: Math.min(Math.max(s.layer, 0), next.layers.length - 1),
    heads: heads.length ? heads : Array.from({ length: next.num_heads }, (_, i) => i),
    head: Math.min(Math.max(s.head, 0), next.num_heads - 1),
    query: token(s.query, next.q_len, sameRows),
    key: token(s.key, next.k_len, old.key_side === next.key_side),
    queries: sameRows ? s.queries.filter((q) => inside(q, next.q_len)) : [],
    pseudo_heads: s.pseudo_heads.filter((p) => offered.includes(p)),
    pair_filter: next.segmented ? s.pair_filter : "all",
  };
}

/** The fields of `clamped` that differ from `s` (what the app sets). */
export function changedFields(s: StreamSelection, clamped: StreamSelection): Partial<StreamSelection> {
  const patch: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(clamped)) {
    if (JSON.stringify(value) !== JSON.stringify(s[name as keyof StreamSelection])) patch[name] = value;
  }
  return patch as Partial<StreamSelection>;
}

/** The `StreamShape` of `sm`, a stream of `meta`. */
export function streamShape(meta: Meta, sm: StreamMeta): StreamShape {
  return { ...sm, segmented: [sm.query_side, sm.key_side].some((side) => meta.sides[side]?.segments != null) };
}
