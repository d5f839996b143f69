// Chunks a page computes from q and k (overview tiles, `top:` rows, a head's `attn:`), computed in
// a Web Worker (js/derive_worker.ts), so a long input's derivation never blocks the page's input;
// the worker also decodes the page's `qk:` chunks it computes from (base64, inflate, float16:
// tens of milliseconds a head at 32768 tokens), so the main thread decodes them only for the
// neuron view.
// The worker runs from its bundled text (a blob: URL; no file is fetched). Where a host forbids
// workers (a strict content security policy) or the text is not built in (node, unit tests), or
// the worker fails a chunk, it is computed on the main thread, by the same functions.
// Each chunk leaves a performance mark saying where it was computed (the browser tests read them).
import type { DeriveAnswer, DeriveRequest } from "./derive_request";
import type { Chunk, EmbeddedChunk, StreamMeta } from "./wire/types";

declare const __ATTNSCOPE_DERIVE_WORKER__: string | undefined; // js/build.mjs defines it

/** The performance marks' names; each mark's `detail` is the chunk key. */
export const WORKER_MARK = "attnscope-derive-worker";
export const MAIN_MARK = "attnscope-derive-main";

interface Pending {
  resolve: (c: Chunk) => void;
  reject: (e: Error) => void;
}

interface DeriveWorker {
  worker: Worker;
  sent: Set<string>;
  pending: Map<number, Pending>;
  next: number;
}

let started: DeriveWorker | null | undefined;

function mark(name: string, key: string): void {
  if (typeof performance !== "undefined" && typeof performance.mark === "function") performance.mark(name, { detail: key });
}

/** The page's derive worker, started on first use; null where workers cannot run. */
function deriveWorker(): DeriveWorker | null {
  if (started !== undefined) return started;
  started = null;
  const text = typeof __ATTNSCOPE_DERIVE_WORKER__ === "string" ? __ATTNSCOPE_DERIVE_WORKER__ : "";
  if (!text || typeof Worker === "undefined" || typeof Blob === "undefined") return null;
  try {
    const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
    const worker = new Worker(url);
    const made: DeriveWorker = { worker, sent: new Set(), pending: new Map(), next: 0 };
    worker.onmessage = (e: MessageEvent<DeriveAnswer>) => {
      const p = made.pending.get(e.data.id);
      made.pending.delete(e.data.id);
      if (!p) return;
      if (e.data.chunk) p.resolve(e.data.chunk);
      else p.reject(new Error(e.data.error ?? "the derive worker gave no chunk"));
    };
    worker.onerror = (e) => {
      // A worker that cannot run (blocked by the host): every waiting chunk, and later ones,
      // is computed on the main thread.
      e.preventDefault();
      started = null;
      for (const p of made.pending.values()) p.reject(new Error("the derive worker stopped"));
      made.pending.clear();
    };
    started = made;
  } catch {
    started = null;
  }
  return started;
}

/**
 * The chunk `key` computed in the worker from the `qk:` chunks `sources` (`embedded(k)` gives
 * each as the page embeds it; the worker decodes and keeps it), or by `onMain()` on the main
 * thread where there is no worker or the worker could not compute it (its chunk, its error
 * included, is then the main thread's own).
 */
export function deriveOffThread(key: string, sources: string[], embedded: (k: string) => EmbeddedChunk, sm: StreamMeta, onMain: () => Promise<Chunk>): Promise<Chunk> {
  const main = (): Promise<Chunk> => onMain().then((c) => {
    mark(MAIN_MARK, key);
    return c;
  });
  const w = deriveWorker();
  if (!w) return Promise.resolve().then(main);
  const fresh = sources.filter((k) => !w.sent.has(k));
  const id = w.next++;
  const answer = new Promise<Chunk>((resolve, reject) => w.pending.set(id, { resolve, reject }));
  const request: DeriveRequest = { id, key, sources, embedded: Object.fromEntries(fresh.map((k) => [k, embedded(k)])), sm };
  try {
    w.worker.postMessage(request);
  } catch {
    w.pending.delete(id);
    return Promise.resolve().then(main);
  }
  for (const k of fresh) w.sent.add(k);
  return answer.then((c) => {
    mark(WORKER_MARK, key);
    return c;
  }, main);
}
