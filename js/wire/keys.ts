// Chunk keys (docs/protocol.md, "Chunks"): the front end builds and reads them here only,
// so the shape of a key is written once (Python's mirror: src/attnscope/encode/keys.py;
// tests/fixtures/wire/keys.json holds keys both sides must read alike). `layer` is the
// layer's position in the stream.

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

/** One layer's weights of every query that shows no image over the image tokens (image view; `_meta.images`). */
export const imageKey = (stream: string, layer: number): string => `image:${stream}:${layer}`;

/** The pictures of `_meta.images`, one (height, width, 3) u8 array per image (`image0`, `image1`, ...). */
export const pixelsKey = (stream: string): string => `pixels:${stream}`;

/** One layer's segment × segment mass of every head (head view's segments mode; `_meta.segments`). */
export const segmentsKey = (stream: string, layer: number): string => `segments:${stream}:${layer}`;

/** One layer's value norms `‖f_h(x_j)‖` and value-weighted row sums (`_meta.streams[s].has_value_norms`). */
export const valueNormsKey = (stream: string, layer: number): string => `vnorm:${stream}:${layer}`;

/** The neuron view's "why" panel: one (layer, head, query, key)'s score split into its sources (encode/keys.py `why_key`). */
export const whyKey = (stream: string, layer: number, head: number, query: number, key: number): string => `why:${stream}:${layer}:${head}:${query}:${key}`;

/** The pairs a widget's "why" panel holds for a stream (encode/keys.py `whys_key`). */
export const whysKey = (stream: string): string => `whys:${stream}`;

/** Parts of each kind's key, kind included; a kind in `ROW_KINDS` may have one more (a first row, or pseudo's query). */
const PARTS: Record<string, number> = { thumbs: 2, top: 3, attn: 4, qk: 4, stats: 2, pseudo: 3, tile: 7, image: 3, pixels: 2, segments: 3, vnorm: 3 };
const ROW_KINDS: readonly string[] = ["thumbs", "top", "pseudo"];

/** Every chunk kind, in protocol order (encode/keys.py `KINDS`). */
export const CHUNK_KINDS: readonly string[] = Object.keys(PARTS);

/** A chunk key's parts (encode/keys.py `ChunkKey`); `head` null on a tile is the layer's mean. */
export interface ParsedKey {
  /** A comparison's side (`a`, `b`, `diff`), or null. */
  side: string | null;
  kind: string;
  stream: string;
  layer: number | null;
  head: number | null;
  /** Thumbnails, top keys: the first query row; pseudo: the one query of a rollout row. */
  firstRow: number | null;
  /** Tiles: (level, row, col). */
  tile: [number, number, number] | null;
}

const index = (text: string | undefined): number | null => (text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : null);

/** The parts of `key` (a comparison's `side/key` too), or null when it is not a key's shape (encode/keys.py `read_key`). */
export function parseChunkKey(key: string): ParsedKey | null {
  const slash = key.indexOf("/");
  const side = slash >= 0 ? key.slice(0, slash) : null;
  const [kind = "", stream = "", ...rest] = key.slice(slash + 1).split(":");
  const count = PARTS[kind];
  if (count === undefined) return null;
  const withRow = ROW_KINDS.includes(kind) && rest.length === count - 1;
  if (rest.length !== count - 2 && !withRow) return null;
  const out: ParsedKey = { side, kind, stream, layer: null, head: null, firstRow: null, tile: null };
  if (kind === "tile") {
    const [layer, head, ...place] = rest;
    const nums = [index(layer), ...place.map(index)];
    if (nums.some((n) => n === null) || (head !== "mean" && index(head) === null)) return null;
    const [l, level, row, col] = nums as [number, number, number, number];
    return { ...out, layer: l, head: head === "mean" ? null : index(head), tile: [level, row, col] };
  }
  const nums = rest.map(index);
  if (nums.some((n) => n === null)) return null;
  const firstRow = withRow ? (nums.pop() as number) : null;
  return { ...out, layer: nums[0] ?? null, head: nums[1] ?? null, firstRow };
}

/** The `:`-separated parts of `key` without a comparison's side, unchecked (for words about any key). */
export const keyParts = (key: string): string[] => key.slice(key.indexOf("/") + 1).split(":");

/** The key of `parsed` (encode/keys.py `ChunkKey.key`), a side's prefix included: any kind in `PARTS`. */
export function writeChunkKey(p: ParsedKey): string {
  const parts: (string | number)[] = [p.kind, p.stream];
  if (p.tile) parts.push(p.layer ?? 0, p.head ?? "mean", ...p.tile);
  else for (const x of [p.layer, p.head, p.firstRow]) if (x != null) parts.push(x);
  return p.side === null ? parts.join(":") : sideKey(p.side, parts.join(":"));
}
