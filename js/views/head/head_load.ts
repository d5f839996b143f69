// The head view's chunks: the layer's rows (a block at a time where the stream
// offers blocks, the neighbouring layers prefetched), the pseudo-heads once one
// is shown, and the locked query's rollout once it is switched on.
import { isolate } from "../../label_text";
import { pseudoKey, queryRolloutKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import type { Chunk } from "../../wire/types";
import { setStatus } from "../common";
import { offeredPseudo, rowOf } from "./head_analysis";
import { tokenRange, type RowRange } from "./head_blocks";
import type { HeadLayout } from "./head_lines";
import { st, stream, summed, type HeadView } from "./head_state";

/**
 * The query rows a draw reads: the rows on screen (with overscan), the
 * focused query's and the summed queries' (each a word's every piece in
 * words mode); the view's numbers wait until all of them are loaded.
 */
function neededRows(v: HeadView, g: HeadLayout): RowRange[] {
  const { display, hover } = v;
  const Q = stream(v).q_len, shown = display.sideQ.labels.length, starts = display.startsQ;
  const ranges: RowRange[] = [];
  if (g.first < shown) ranges.push(tokenRange(g.first, Math.min(g.last, shown - 1), starts, Q));
  const focus = [rowOf(display.wordsQ, st(v).query), hover?.side === "query" ? hover.i : null, ...summed(v)];
  for (const r of focus) if (r != null && r >= 0 && r < shown) ranges.push(tokenRange(r, r, starts, Q));
  return ranges;
}

/** Ask for the rows `g` needs; say on the status line while they load, or why they cannot. */
export function loadRows(v: HeadView, g: HeadLayout): void {
  const { status } = v.dom;
  const ranges = neededRows(v, g);
  v.ready = v.top.need(ranges);
  const failed = v.top.error(), s = st(v);
  if (failed) {
    setStatus(status, `Could not load ${chunkWords(failed.key, v.ctx.meta)}: ${failed.error}`, "error");
    v.loadStatus = "error";
  } else if (!v.ready) {
    setStatus(status, `Loading layer ${stream(v).layers[s.layer] ?? s.layer}…`);
    v.loadStatus = "loading";
  } else if (v.loadStatus) {
    setStatus(status, null);
    v.loadStatus = null;
  }
  if (v.ready && !v.prefetched) {
    v.prefetched = true;
    const next = [s.layer + 1, s.layer - 1].filter((l) => l >= 0 && l < stream(v).layers.length);
    v.top.prefetchLayers(next, ranges);
  }
}

/** Show the store's stream and layer (segments panel, rows, pseudo-heads), then draw. */
export function loadLayer(v: HeadView): void {
  const s = st(v);
  v.dom.segPanel.load();
  v.top.show(s.stream, s.layer, stream(v));
  v.prefetched = false;
  loadPseudo(v);
  v.redraw();
}

/** The layer's pseudo-heads, once any is shown. */
export function loadPseudo(v: HeadView): void {
  const { data, meta } = v.ctx;
  const s = st(v);
  if (!v.analysing || !s.pseudo_heads.length || !offeredPseudo(stream(v)).length) return;
  const key = pseudoKey(s.stream, s.layer);
  if (key === v.pseudoChunkKey && v.pseudo) return;
  v.pseudoChunkKey = key;
  v.pseudo = data.peek(key) ?? null;
  if (v.pseudo) return;
  data.request([key]).then((m) => {
    if (v.pseudoChunkKey !== key) return;
    const pseudo = m.get(key) ?? { key, arrays: {}, error: "missing" };
    v.pseudo = pseudo;
    if (pseudo.error) setStatus(v.dom.status, `Could not load ${chunkWords(key, meta)}: ${pseudo.error}`, "error");
    v.redraw();
  }).catch(() => undefined);
}

/** The rollout chunk the current layer and locked query need, or null (off, no query, words mode). */
export function rolloutWanted(v: HeadView): string | null {
  const s = st(v);
  if (!v.rolloutOn || !v.analysing || !stream(v).rollout_query || s.words || s.query == null) return null;
  return queryRolloutKey(s.stream, s.layer, s.query);
}

/** The locked query's rollout through the current layer, computed by Python when asked. */
export function loadRollout(v: HeadView): void {
  const { data, meta } = v.ctx;
  const { status } = v.dom;
  const key = rolloutWanted(v);
  if (!key) { v.rollout = null; return; }
  if (v.rollout?.key === key) return;
  const rollout: { key: string; chunk: Chunk | null } = { key, chunk: data.peek(key) ?? null };
  v.rollout = rollout;
  if (rollout.chunk) return;
  const q = st(v).query ?? 0, { display } = v;
  setStatus(status, `Computing the rollout of “${isolate(display.sideQ.labels[rowOf(display.wordsQ, q) ?? q] ?? String(q))}” through layer ${stream(v).layers[st(v).layer] ?? st(v).layer}…`);
  data.request([key]).then((m) => {
    if (v.rollout?.key !== key) return;
    const chunk = m.get(key) ?? { key, arrays: {}, error: "missing" };
    v.rollout.chunk = chunk;
    setStatus(status, chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : null, chunk.error ? "error" : "info");
    v.redraw();
  }).catch(() => undefined);
}
