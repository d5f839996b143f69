// Overview tiles of a page in a Web Worker (js/derive_worker.ts), so a tile of a long input never
// blocks the page's input. The worker runs from its bundled text (a blob: URL; no file is
// fetched). Where a host forbids workers (a strict content security policy) or the text is not
// built in (unit tests), tiles are computed on the main thread as before.
import type { TileAnswer, TileRequest } from "./derive_worker";
import type { Chunk, StreamMeta } from "./wire/types";

declare const __ATTNSCOPE_TILE_WORKER__: string | undefined; // js/build.mjs defines it

interface Pending {
  resolve: (c: Chunk) => void;
  reject: (e: Error) => void;
}

interface TileWorker {
  worker: Worker;
  sent: Set<string>;
  pending: Map<number, Pending>;
  next: number;
}

let started: TileWorker | null | undefined;

/** The page's tile worker, started on first use; null where workers cannot run. */
function tileWorker(): TileWorker | null {
  if (started !== undefined) return started;
  started = null;
  const text = typeof __ATTNSCOPE_TILE_WORKER__ === "string" ? __ATTNSCOPE_TILE_WORKER__ : "";
  if (!text || typeof Worker === "undefined" || typeof Blob === "undefined") return null;
  try {
    const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
    const worker = new Worker(url);
    const made: TileWorker = { worker, sent: new Set(), pending: new Map(), next: 0 };
    worker.onmessage = (e: MessageEvent<TileAnswer>) => {
      const p = made.pending.get(e.data.id);
      made.pending.delete(e.data.id);
      if (!p) return;
      if (e.data.chunk) {
        performance.mark("attnscope-tile-worker");
        p.resolve(e.data.chunk);
      } else p.reject(new Error(e.data.error ?? "the tile worker gave no tile"));
    };
    worker.onerror = (e) => {
      // A worker that cannot run (blocked by the host): every waiting tile, and later ones,
      // is computed on the main thread.
      e.preventDefault();
      started = null;
      for (const p of made.pending.values()) p.reject(new Error("the tile worker stopped"));
      made.pending.clear();
    };
    started = made;
  } catch {
    started = null;
  }
  return started;
}

/**
 * The tile `key` from the `qk:` chunks `qks` (keyed `sources`), computed in the worker, or
 * `fallback()` on the main thread where there is no worker or it failed.
 */
export function tileOffThread(key: string, sources: string[], qks: Chunk[], sm: StreamMeta, fallback: () => Chunk): Promise<Chunk> {
  const w = tileWorker();
  if (!w) return Promise.resolve().then(fallback);
  const fresh = qks.filter((c) => !w.sent.has(c.key));
  const id = w.next++;
  const answer = new Promise<Chunk>((resolve, reject) => w.pending.set(id, { resolve, reject }));
  const request: TileRequest = { id, key, sources, chunks: fresh, sm };
  try {
    w.worker.postMessage(request);
  } catch {
    w.pending.delete(id);
    return Promise.resolve().then(fallback);
  }
  for (const c of fresh) w.sent.add(c.key);
  return answer.catch(fallback);
}
