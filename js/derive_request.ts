// What a page derives from q and k, by chunk key, and the derive worker's message handling
// (js/derive_worker.ts runs it; js/derive_off_thread.ts sends it requests). The worker and the
// main-thread fallback call the same decodeEmbedded and deriveFromQk, so a chunk is the same
// bytes wherever it is computed.
import { attnFromQk, topFromQk } from "./derive";
import { tileFromQk, tileStepsFromQk } from "./derive_tiles";
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

/**
 * deriveFromQk in steps, for a queue that answers other requests between them: a tile yields
 * after each of its cell rows (tileStepsFromQk: the bytes tileFromQk computes); any other chunk
 * is computed in its first step.
 */
export function* deriveStepsFromQk(key: string, qks: Chunk[], sm: StreamMeta): Generator<unknown, Chunk, void> {
  if (parseChunkKey(key)?.kind === "tile") return yield* tileStepsFromQk(key, qks, sm);
  return deriveFromQk(key, qks, sm);
}

/** The buffers of a chunk's arrays, each once (they move to the page instead of being copied). */
export function chunkBuffers(c: Chunk): ArrayBuffer[] {
  return [...new Set(Object.values(c.arrays).map((a) => a.data.buffer as ArrayBuffer))];
}

/** Requests answered before tiles: the head view's rows and a head's weights wait on them. */
const urgent = (key: string): boolean => parseChunkKey(key)?.kind !== "tile";

/** How long the worker computes a tile before it looks for a `top:` or `attn:` asked meanwhile. */
export const SLICE_MS = 10;

/** A request whose chunk is being computed, a step at a time. */
interface Job {
  r: DeriveRequest;
  steps: Generator<unknown, Chunk, void>;
}

/**
 * The worker's side: `receive` each request as it comes. The embedded `qk:` chunks it carries
 * are decoded at once (checked against their stream's `_meta`, as the page checks them) and kept
 * for later requests. The queue works in turns (`schedule`), the next turn asked when the last
 * is done, so requests that came in meanwhile are queued by then. A turn answers a `top:` or
 * `attn:` request if one waits (before tiles asked earlier, so the head view does not wait behind
 * a pan's queue of tiles), else computes the tile begun, or the next, for about `sliceMs` (at
 * least one of its cell rows; `now` is the clock): a tile of 32768 tokens takes about a second,
 * so a hovered cell's weights wait for one slice of it, not all of it. Each chunk is one message
 * through `post`, its buffers transferred.
 */
export function deriveQueue(
  post: (a: DeriveAnswer, transfer: ArrayBuffer[]) => void,
  schedule: (run: () => void) => void,
  sliceMs = SLICE_MS,
  now: () => number = () => performance.now(),
): (r: DeriveRequest) => void {
  const held = new Map<string, Promise<Chunk>>();
  const waiting: DeriveRequest[] = [];
  const begun: Job[] = [];
  let busy = false;
  const fail = (r: DeriveRequest, err: unknown): void => post({ id: r.id, error: (err as Error).message }, []);
  const begin = async (r: DeriveRequest): Promise<Job | null> => {
    try {
      const qks = await Promise.all(r.sources.map((k) => held.get(k) ?? Promise.reject(new Error(`the worker holds no ${k}`))));
      const bad = qks.find((c) => c.error);
      if (bad) throw new Error(`${bad.key}: ${bad.error ?? ""}`);
      return { r, steps: deriveStepsFromQk(r.key, qks, r.sm) };
    } catch (err) {
      fail(r, err);
      return null;
    }
  };
  const turn = async (): Promise<void> => {
    const at = waiting.findIndex((r) => urgent(r.key));
    let job = at < 0 ? begun.shift() : undefined;
    if (!job) {
      const [r] = waiting.splice(Math.max(0, at), 1);
      job = r && ((await begin(r)) ?? undefined);
    }
    if (!job) return;
    try {
      const start = now();
      let step = job.steps.next();
      while (!step.done && now() - start < sliceMs) step = job.steps.next();
      if (step.done) post({ id: job.r.id, chunk: step.value }, chunkBuffers(step.value));
      else begun.unshift(job); // the first to go on
    } catch (err) {
      fail(job.r, err);
    }
  };
  const wake = (): void => {
    if (busy || !(waiting.length || begun.length)) return;
    busy = true;
    schedule(() => {
      void turn().then(() => {
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
