// Chunk keys (docs/protocol.md, "Chunks"): the front end builds them here only,
// so the shape of a key is written once. `layer` is the layer's position in the stream.

/** Every layer and head's thumbnail (model view); from `firstRow` on, the rows after the prompt only. */
export const thumbsKey = (stream: string, firstRow?: number): string =>
  (firstRow == null ? `thumbs:${stream}` : `thumbs:${stream}:${firstRow}`);

/** One layer's strongest keys per query, every head (head view). */
export const topKey = (stream: string, layer: number): string => `top:${stream}:${layer}`;

/** The same for the block of query rows from `firstRow` on (`_meta.streams[s].top_block` rows, `firstRow` a multiple of it). */
export const topBlockKey = (stream: string, layer: number, firstRow: number): string => `top:${stream}:${layer}:${firstRow}`;

/** One head at full resolution (model-view preview; the neuron view's recorded weights). */
export const attnKey = (stream: string, layer: number, head: number): string => `attn:${stream}:${layer}:${head}`;

/** One head's q and k vectors (neuron view). */
export const qkKey = (stream: string, layer: number, head: number): string => `qk:${stream}:${layer}:${head}`;

/** A chunk of one side of a comparison (docs/protocol.md, "Comparisons"): `a/`, `b/` or `diff/` before any key above. */
export const sideKey = (side: string, key: string): string => `${side}/${key}`;

/** Every head statistic of every layer (model view badges and ranking). */
export const statsKey = (stream: string): string => `stats:${stream}`;

/** One overview tile (docs/protocol.md, "Overview tiles"): a head, or "mean" of the layer's heads, at zoom `level`. */
export const tileKey = (stream: string, layer: number, head: number | "mean", level: number, row: number, col: number): string =>
  `tile:${stream}:${layer}:${head}:${level}:${row}:${col}`;

/** One layer's pseudo-heads (mean of heads, rollout), in the `top:` format (head view). */
export const pseudoKey = (stream: string, layer: number): string => `pseudo:${stream}:${layer}`;

/** One query's rollout through a layer (long inputs: `_meta.streams[s].rollout_query`), one row in the `top:` format. */
export const queryRolloutKey = (stream: string, layer: number, query: number): string => `pseudo:${stream}:${layer}:${query}`;
