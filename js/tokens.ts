// Token sides of a stream: labels, kinds, segments, and the defaults that follow from them.
import type { Meta, SideMeta, StreamMeta, TokenKind } from "./wire/types";

/** Put before a piece that continues a word, so "un ·bel ·ie ·va ·bly" reads as one word. */
export const PIECE_MARK = "·";

export interface Side {
  /** What the views and exports print: the readable label, word pieces marked. */
  labels: string[];
  raw: string[];
  kinds: TokenKind[];
  /** Per token: a piece continuing the word before it (its label starts with PIECE_MARK). */
  continues: boolean[];
  segments: number[] | null;
}

function side(meta: Meta, name: string, n: number): Side {
  const s: SideMeta | null | undefined = meta.sides?.[name];
  const plain = Array.from({ length: n }, (_, i) => s?.labels[i] ?? String(i));
  const labels = plain.map((l, i) => (s?.continues?.[i] ? PIECE_MARK + l.trimStart() : l));
  return {
    labels,
    raw: plain.map((l, i) => s?.raw?.[i] ?? l),
    kinds: labels.map((_, i) => s?.kinds?.[i] ?? "token"),
    continues: labels.map((_, i) => !!s?.continues?.[i]),
    segments: s?.segments && s.segments.length >= n ? s.segments : null,
  };
}

export function streamOf(meta: Meta, stream: string): StreamMeta {
  const s = meta.streams[stream] ?? Object.values(meta.streams)[0];
  if (!s) throw new Error("the trace has no attention streams");
  return s;
}

export function querySide(meta: Meta, s: StreamMeta): Side { return side(meta, s.query_side, s.q_len); }
export function keySide(meta: Meta, s: StreamMeta): Side { return side(meta, s.key_side, s.k_len); }

/**
 * The query a view opens on when none is chosen: an ordinary token (neither special nor padding).
 * In a causal stream (`causal`: no query sees a later key) the last one, which sees the whole
 * input and is the one the model predicts from; elsewhere (bidirectional, cross-attention, a
 * page without the field) the first. When every token is special or padding: the last row of
 * a causal stream, else 0.
 */
export function defaultQuery(sideQ: Side, sm: Pick<StreamMeta, "causal">): number {
  const { kinds } = sideQ;
  if (sm.causal !== true) return Math.max(0, kinds.indexOf("token"));
  const last = kinds.lastIndexOf("token");
  return last >= 0 ? last : Math.max(0, kinds.length - 1);
}

/** CSS class suffixes for a token row. */
export function tokenClasses(s: Side, i: number): string {
  let cls = "attnscope-tok";
  const kind = s.kinds[i];
  if (kind === "special") cls += " is-special";
  else if (kind === "padding") cls += " is-padding";
  if (s.continues[i]) cls += " is-piece";
  if (s.segments && i > 0 && s.segments[i] !== s.segments[i - 1]) cls += " is-boundary";
  return cls;
}

/** Whether a (query, key) pair passes the sentence-pair filter. */
export function pairPasses(filter: string, qSeg: number | undefined, kSeg: number | undefined): boolean {
  if (filter === "all" || filter.length !== 2) return true;
  const want = (c: string): number => (c === "A" ? 0 : 1);
  return (qSeg ?? 0) === want(filter[0] as string) && (kSeg ?? 0) === want(filter[1] as string);
}
