// Overview tiles computed in the page from q and k (docs/protocol.md, "Overview tiles"):
// the `tile:` chunk Python sends, with fewer queries sampled per cell row
// (DERIVE_TILE_WEIGHTS a tile), so a tile of 32768 tokens takes about a second.
import { parseChunkKey } from "./wire/keys";
import { qkParts, rowWeights, type QkParts } from "./derive";
import type { Chunk, StreamMeta } from "./wire/types";
import { spanAt, TILE } from "./views/overview/overview_geometry";

/** Most weights the page computes for one tile (Python: 2^25). */
export const DERIVE_TILE_WEIGHTS = 2 ** 24;
const DECADES = 6;

/** A tile key's parts, or null when it names no tile of `sm`. */
export function parseTileKey(key: string, sm: StreamMeta): { layer: number; heads: number[]; level: number; row: number; col: number } | null {
  const p = parseChunkKey(key);
  if (p?.kind !== "tile" || p.tile === null || p.layer === null) return null;
  const [level, row, col] = p.tile;
  const heads = p.head === null ? Array.from({ length: sm.num_heads }, (_, h) => h) : [p.head];
  return heads.every((h) => h < sm.num_heads) ? { layer: p.layer, heads, level, row, col } : null;
}

/** A weight as a tile byte: 0 for 0, else 255 + 254/6 · log10(w), at least 1. */
export const tileByte = (w: number): number => (w > 0 ? Math.max(1, Math.min(255, Math.round(255 + (254 / DECADES) * Math.log10(Math.min(w, 1))))) : 0);

/** The tile `key` names, from the `qk:` chunks of its heads (one, or every head for the mean). */
export function tileFromQk(key: string, qks: Chunk[], sm: StreamMeta): Chunk {
  return finish(tileStepsFromQk(key, qks, sm));
}

/**
 * tileFromQk in steps: each `next()` computes one of the tile's cell rows (its sampled queries,
 * every head) and yields its index; the last returns the chunk, the same bytes as tileFromQk's.
 * The derive worker runs a few steps a turn, so a `top:` or `attn:` asked meanwhile does not wait
 * for the whole tile (about a second at 32768 tokens).
 */
export function tileStepsFromQk(key: string, qks: Chunk[], sm: StreamMeta): Generator<number, Chunk, void> {
  const parts = qks.map(qkParts);
  return tileRows(key, sm, parts.length, (h, query, w, score, masked) => rowWeights(parts[h] as QkParts, query, w, score, masked));
}

/** What a generator of steps returns, all its steps run. */
function finish<T>(steps: Generator<unknown, T, void>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** The tile `key` names, from the `attn:` chunks of its heads (a page that keeps weights: one byte each). */
export function tileFromAttn(key: string, attns: Chunk[], sm: StreamMeta): Chunk {
  return finish(tileRows(key, sm, attns.length, (h, query, w) => {
    const c = attns[h] as Chunk;
    const weight = c.arrays.weight?.data, rowmax = c.arrays.rowmax?.data;
    if (!weight || !rowmax) throw new Error(`${c.key} has no weights`);
    const scale = (rowmax[query] as number) / 255;
    for (let j = 0; j < sm.k_len; j++) w[j] = (weight[query * sm.k_len + j] as number) * scale;
    return w;
  }));
}

type RowOf = (head: number, query: number, out: Float64Array<ArrayBuffer>, score: Float64Array<ArrayBuffer>, masked: Uint8Array<ArrayBuffer>) => Float64Array;

/** A tile from the weight rows `rowOf` gives, a cell row a step (it yields the row's index). */
function* tileRows(key: string, sm: StreamMeta, heads: number, rowOf: RowOf): Generator<number, Chunk, void> {
  const place = parseTileKey(key, sm);
  if (!place) throw new Error(`${key} names no tile`);
  const parts = Array.from({ length: heads }, (_, h) => h);
  const { q_len: Q, k_len: K } = sm;
  const span = spanAt(Q, K, place.level), cover = TILE * span;
  const q0 = place.row * cover, k0 = place.col * cover;
  const q1 = Math.min(Q, q0 + cover), k1 = Math.min(K, k0 + cover);
  const sample = Math.max(1, Math.min(span, 16, Math.floor(DERIVE_TILE_WEIGHTS / (TILE * K * parts.length))));
  const pooled = new Float64Array(TILE * TILE);
  const w = new Float64Array(K), sum = new Float64Array(K), score = new Float64Array(K), masked = new Uint8Array(K);
  for (let i = 0; i < TILE; i++) {
    const first = q0 + i * span, n = Math.min(q1, first + span) - first;
    if (n <= 0) break;
    const m = Math.min(n, sample);
    for (let s = 0; s < m; s++) {
      const query = first + Math.floor((s * n) / m);
      sum.fill(0);
      for (const p of parts) {
        rowOf(p, query, w, score, masked);
        for (let j = k0; j < k1; j++) sum[j] = (sum[j] as number) + (w[j] as number);
      }
      for (let j = k0; j < k1; j++) {
        const at = i * TILE + Math.floor((j - k0) / span), v = (sum[j] as number) / parts.length;
        if (v > (pooled[at] as number)) pooled[at] = v;
      }
    }
    yield i;
  }
  const tile = new Uint8Array(TILE * TILE);
  for (let i = 0; i < tile.length; i++) tile[i] = tileByte(pooled[i] as number);
  return { key, arrays: { tile: { dtype: "u8", shape: [TILE, TILE], data: tile } } };
}
