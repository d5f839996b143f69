// What a page derives from q and k, by chunk key, and the derive worker's message handling
// (js/derive_worker.ts runs it; js/derive_off_thread.ts sends it requests). The worker and the
// main-thread fallback call the same decodeEmbedded and deriveFromQk, so a chunk is the same
// bytes wherever it is computed.
import { attnFromQk, topFromQk } from "./derive";
import { tileFromQk } from "./derive_tiles";
import { decodeEmbedded } from "./saved";
import { parseChunkKey } from "./wire/keys";
import type { Chunk, EmbeddedChunk, Meta, StreamMeta } from "./wire/types";

/**
 * What the page asks: a chunk key, the `qk:` keys it is computed from, and those of them not
 * sent before, as the page embeds them (the worker decodes them, once).
 */
export interface DeriveRequest {
  id: number;
  key: string;
  sources: string[];
  embedded: Record<string, EmbeddedChunk>;
  sm: StreamMeta;
}

/** The answer: the chunk, or why it could not be computed. */
export interface DeriveAnswer {
  id: number;
  chunk?: Chunk;
  error?: string;
}

/** Rows `[first, first + top_block)` of a `top:<s>:<l>:<first>` block the page offers, or null for one it does not. */
export function topBlockRows(first: number, sm: StreamMeta): [number, number] | null {
  const size = sm.top_block ?? 0;
  if (!(size > 0) || !Number.isInteger(first) || first < 0 || first >= sm.q_len || first % size) return null;
  return [first, Math.min(first + size, sm.q_len)];
}

/**
 * The `tile:`, `top:` (a layer, or a block of its rows) or `attn:` chunk `key` from the `qk:`
 * chunks of its heads, in head order (one for `attn:` and a head's tile, every head of the
 * layer for `top:` and a mean tile). Throws for any other key.
 */
export function deriveFromQk(key: string, qks: Chunk[], sm: StreamMeta): Chunk {
  const parsed = parseChunkKey(key);
  if (parsed?.kind === "tile") return tileFromQk(key, qks, sm);
  if (parsed?.kind === "attn") {
    const qk = qks[0];
    if (!qk) throw new Error(`${key}: no q and k to compute it from`);
    return attnFromQk(key, qk);
  }
  if (parsed?.kind === "top") {
    const rows = parsed.firstRow === null ? undefined : topBlockRows(parsed.firstRow, sm);
    if (rows === null) throw new Error(`${key} is no block of rows this page offers`);
    return topFromQk(key, qks, sm.top_k, rows);
  }
  throw new Error(`${key} is not computed from q and k`);
}

/** The buffers of a chunk's arrays, each once (they move to the page instead of being copied). */
export function chunkBuffers(c: Chunk): ArrayBuffer[] {
  return [...new Set(Object.values(c.arrays).map((a) => a.data.buffer as ArrayBuffer))];
}

/** Requests answered before tiles: the head view's rows and a head's weights wait on them. */
const urgent = (key: string): boolean => parseChunkKey(key)?.kind !== "tile";

/**
 * The worker's side: `receive` each request as it comes. The embedded `qk:` chunks it carries
 * are decoded at once (checked against their stream's `_meta`, as the page checks them) and kept
 * for later requests. Requests are answered one at a time through `post`, each in its own turn
 * (`schedule`), `top:` and `attn:` before tiles asked earlier, so the head view does not wait
 * behind a pan's queue of tiles (about a second each at 32768 tokens).
 */
export function deriveQueue(post: (a: DeriveAnswer, transfer: ArrayBuffer[]) => void, schedule: (run: () => void) => void): (r: DeriveRequest) => void {
  const held = new Map<string, Promise<Chunk>>();
  const waiting: DeriveRequest[] = [];
  let busy = false;
  const answer = async (r: DeriveRequest): Promise<void> => {
    try {
      const qks = await Promise.all(r.sources.map((k) => held.get(k) ?? Promise.reject(new Error(`the worker holds no ${k}`))));
      const bad = qks.find((c) => c.error);
      if (bad) throw new Error(`${bad.key}: ${bad.error ?? ""}`);
      const chunk = deriveFromQk(r.key, qks, r.sm);
      post({ id: r.id, chunk }, chunkBuffers(chunk));
    } catch (err) {
      post({ id: r.id, error: (err as Error).message }, []);
    }
  };
  const wake = (): void => {
    if (busy || !waiting.length) return;
    busy = true;
    // One request a turn, the next chosen after the last is answered: requests that came in
    // while it was computed are queued by then.
    schedule(() => {
      const at = waiting.findIndex((r) => urgent(r.key));
      const [r] = waiting.splice(Math.max(0, at), 1);
      void (r ? answer(r) : Promise.resolve()).then(() => {
        busy = false;
        wake();
      });
    });
  };
  return (r) => {
    const stream = parseChunkKey(r.key)?.stream ?? "";
    const meta = { streams: { [stream]: r.sm } } as unknown as Meta; // a qk: chunk's arrays depend on its stream only
    for (const [k, e] of Object.entries(r.embedded)) held.set(k, decodeEmbedded(k, e, meta));
    waiting.push(r);
    wake();
  };
}
