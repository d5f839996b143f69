// The page's tile worker: overview tiles computed from q and k off the main thread, so panning
// and zooming stay responsive while a tile of a long input is computed (about a second at 32768
// tokens). js/tile_worker.ts starts it from this file's bundled text (js/build.mjs) and sends each
// head's `qk:` chunk once; the worker keeps them and answers one tile per message.
import { tileFromQk } from "./derive_tiles";
import type { Chunk, StreamMeta } from "./wire/types";

/** What the page asks: a tile key, the `qk:` keys it is computed from, chunks not sent before. */
export interface TileRequest {
  id: number;
  key: string;
  sources: string[];
  chunks: Chunk[];
  sm: StreamMeta;
}

/** The answer: the tile, or why it could not be computed. */
export interface TileAnswer {
  id: number;
  chunk?: Chunk;
  error?: string;
}

const held = new Map<string, Chunk>();
const scope = self as unknown as { onmessage: ((e: MessageEvent<TileRequest>) => void) | null; postMessage: (a: TileAnswer, t?: Transferable[]) => void };

scope.onmessage = (e: MessageEvent<TileRequest>): void => {
  const { id, key, sources, chunks, sm } = e.data;
  for (const c of chunks) held.set(c.key, c);
  try {
    const qks = sources.map((k) => {
      const c = held.get(k);
      if (!c) throw new Error(`the worker holds no ${k}`);
      return c;
    });
    const chunk = tileFromQk(key, qks, sm);
    const tile = chunk.arrays.tile?.data;
    scope.postMessage({ id, chunk }, tile ? [tile.buffer as ArrayBuffer] : []);
  } catch (err) {
    scope.postMessage({ id, error: (err as Error).message });
  }
};
