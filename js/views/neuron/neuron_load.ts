// The neuron view's data: the head's q and k (its neighbours' fetched ahead), the
// recorded weights to check against, and the rows computed from them.
import { attnKey, qkKey } from "../../wire/keys";
import { chunkWords } from "../../chunk_words";
import { setStatus } from "../common";
import { neuronRows } from "./neuron_rows";
import { queryIdx, reason, st, streamNow, type NeuronView } from "./neuron_state";

/** Fetch q and k of the selected layer and head, once per key. */
export function loadQk(n: NeuronView): void {
  const { data, meta } = n.ctx;
  const { status, view } = n.dom;
  if (reason(n)) { n.redraw(); return; }
  const s = st(n);
  const key = qkKey(s.stream, s.layer, s.head);
  if (key === n.chunkKey && n.chunk) return;
  n.chunkKey = key;
  n.recordedKey = attnKey(s.stream, s.layer, s.head);
  n.rowsFor = "";
  n.rows = null;
  n.chunk = data.peek(key) ?? null;
  if (!n.chunk) { setStatus(status, "Loading q and k…"); view.dataset.ready = "false"; }
  data.request([key]).then((got) => {
    if (key !== n.chunkKey) return;
    const chunk = got.get(key) ?? { key, arrays: {}, error: "missing" };
    n.chunk = chunk;
    setStatus(status, chunk.error ? `Could not load ${chunkWords(key, meta)}: ${chunk.error}` : null, chunk.error ? "error" : "info");
    n.redraw();
    const H = streamNow(n).num_heads;
    const next = [s.head + 1, s.head - 1].filter((x) => x >= 0 && x < H).map((x) => qkKey(s.stream, s.layer, x));
    if (next.length) void data.request(next);
  }).catch(() => undefined);
  // A page's q/k that carry the row maxima are checked against those, not against `attn:`.
  void data.request([key]).then((got) => got.get(key)?.arrays.rowmax ? null : data.request([n.recordedKey]))
    .then((got) => { if (got && key === n.chunkKey) n.redraw(); }).catch(() => undefined);
  n.redraw();
}

/** The rows of the query (and their order), recomputed only when what they depend on changed. */
export function computeRows(n: NeuronView): void {
  const { sortSel } = n.dom;
  const recorded = n.ctx.data.peek(n.recordedKey);
  const key = `${n.chunkKey}|${queryIdx(n)}|${sortSel.value}|${recorded ? 1 : 0}`;
  if (key === n.rowsFor || !n.chunk || n.chunk.error) return;
  n.rowsFor = key;
  const r = neuronRows(n.chunk, queryIdx(n), recorded);
  n.rows = r;
  n.order = Uint32Array.from({ length: r.K }, (_, i) => i);
  if (sortSel.value === "weight") n.order.sort((a, b) => (r.weight[b] as number) - (r.weight[a] as number) || a - b);
}
