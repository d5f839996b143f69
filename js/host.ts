// In-page model host for the exported page: the part of anywidget's model API the
// binding uses, over the saved state, answering chunk requests from the embedded,
// compressed chunks.
import { attnKey, keyParts, parseChunkKey, qkKey } from "./wire/keys";
import { deriveOffThread } from "./derive_off_thread";
import { deriveFromQk, topBlockRows } from "./derive_request";
import { parseTileKey, tileFromAttn } from "./derive_tiles";
import { decodeEmbedded, type EmbeddedChunk } from "./saved";
import type { ModelHost, WidgetTraits } from "./traits";
import type { Chunk, Meta, StreamMeta } from "./wire/types";
import { metaProblem } from "./wire/validate_meta";

export type { EmbeddedChunk } from "./saved";

// biome-ignore lint/suspicious/noExplicitAny: callbacks of every event share one registry (anywidget's model.on takes any callback)
type Callback = (...args: any[]) => void;

/** Most weights of one head the page computes whole (a 5792 × 5792 head; 32 MB of bytes). */
export const DERIVE_ATTN_WEIGHTS = 2 ** 25;

export interface PageHost extends ModelHost {
  /** Chunks decoded so far (for tests). */
  readonly decoded: Map<string, Chunk>;
}

/**
 * A model whose state is `state` (trait values, `_meta` included) and whose
 * `send({type: "request", keys})` answers with a `chunks` message built from
 * `chunks`. Answers are asynchronous, as from a kernel.
 */
export function createPageHost(state: Record<string, unknown>, given: Record<string, EmbeddedChunk>): PageHost {
  // The page's JSON is untrusted input (docs/protocol.md, "Caps"): anything but an object holds no chunks.
  const chunks: Record<string, EmbeddedChunk> = typeof given === "object" && given !== null && !Array.isArray(given) ? given : {};
  const values = new Map<string, unknown>(Object.entries(state));
  const handlers = new Map<string, Set<Callback>>();
  const decoded = new Map<string, Chunk>();
  const emit = (event: string, ...args: unknown[]): void => {
    for (const fn of [...(handlers.get(event) ?? [])]) fn(...args);
  };

  // The chunks' specs are checked against _meta when it is valid (js/bind.ts mounts nothing otherwise).
  let metaSeen: unknown, metaChecked: Meta | undefined;
  const checkedMeta = (): Meta | undefined => {
    const meta = values.get("_meta");
    if (meta !== metaSeen) { metaSeen = meta; metaChecked = metaProblem(meta) === null ? (meta as Meta) : undefined; }
    return metaChecked;
  };

  const embeddedOf = (key: string): EmbeddedChunk => chunks[key] ?? {};

  async function decode(key: string): Promise<Chunk> {
    const hit = decoded.get(key);
    if (hit) return hit;
    const e = Object.hasOwn(chunks, key) ? chunks[key] : undefined;
    if (!e) return derive(key) ?? { key, arrays: {}, error: leftOutWords(key) };
    const c = await decodeEmbedded(key, e, checkedMeta());
    if (!c.error) decoded.set(key, c);
    return c;
  }

  /**
   * A `top:` or `attn:` chunk the page left out because it holds the `qk:` chunks
   * it is computed from (protocol.md, "Pages that derive"), or null.
   */
  function derive(key: string): Promise<Chunk> | null {
    const meta = values.get("_meta") as Meta | undefined;
    const parsed = parseChunkKey(key);
    const sm = parsed && parsed.side === null ? meta?.streams[parsed.stream] : undefined;
    if (!parsed || !sm) return null;
    const { kind, stream, layer, head, firstRow } = parsed;
    if (kind === "tile") return deriveTile(key, sm);
    if (kind !== "top" && kind !== "attn") return null;
    // top:<s>:<l>:<first row> is a block of the head view's rows (the page's _meta offers them).
    if (kind === "top" && firstRow !== null && !topBlockRows(firstRow, sm)) return null;
    const heads = kind === "attn" ? [head ?? 0] : Array.from({ length: sm.num_heads }, (_, h) => h);
    const sources = heads.map((h) => qkKey(stream, layer ?? 0, h));
    // Only a page written to derive (its qk: chunks carry the row maxima) computes them: on a
    // long input's page a left-out attn: stays left out (at 32768 tokens it is 2^30 weights).
    const derives = (k: string): boolean => Array.isArray(chunks[k]?.arrays) && !!chunks[k]?.arrays?.some((a) => a?.name === "rowmax");
    if (!sources.every((k) => derives(k) && !chunks[k]?.error)) return null;
    if (kind === "attn" && sm.q_len * sm.k_len > DERIVE_ATTN_WEIGHTS) {
      // A whole head at a long length (2^30 weights at 32768 tokens) would not fit the tab; the
      // neuron view computes the rows it shows from q and k, the model view previews thumbnails.
      return Promise.resolve({ key, arrays: {}, error: `one head's ${sm.q_len} × ${sm.k_len} weights are too many to compute in the page (the neuron view computes each row from q and k)` });
    }
    // Here, from the chunks this thread decodes: what the worker's answer is, byte for byte.
    const onMain = (): Promise<Chunk> => Promise.all(sources.map(decode)).then((qks) => {
      const bad = qks.find((c) => c.error);
      if (bad) return { key, arrays: {}, error: `q and k of head ${parseChunkKey(bad.key)?.head ?? ""}: ${bad.error ?? ""}` };
      try {
        return deriveFromQk(key, qks, sm);
      } catch (err) {
        return { key, arrays: {}, error: `could not compute from q and k: ${(err as Error).message}` };
      }
    });
    return deriveOffThread(key, sources, embeddedOf, sm, onMain).then(keep);
  }

  /** An overview tile from the q/k of its heads (protocol.md, "Overview tiles"), or null without them. */
  function deriveTile(key: string, sm: StreamMeta): Promise<Chunk> | null {
    const place = parseTileKey(key, sm);
    const stream = parseChunkKey(key)?.stream ?? "";
    const kept = (make: (h: number) => string): string[] | null => {
      const keys = place?.heads.map(make) ?? [];
      return keys.length && keys.every((k) => chunks[k] && !chunks[k]?.error) ? keys : null;
    };
    // q and k where the page keeps them (any length), else a short page's one-byte weights.
    const fromQk = kept((h) => qkKey(stream, place?.layer ?? 0, h));
    const sources = fromQk ?? kept((h) => attnKey(stream, place?.layer ?? 0, h));
    if (!sources) return null;
    const onMain = (): Promise<Chunk> => Promise.all(sources.map(decode)).then((got) => {
      const bad = got.find((c) => c.error);
      if (bad) return { key, arrays: {}, error: `data of head ${parseChunkKey(bad.key)?.head ?? ""}: ${bad.error ?? ""}` };
      return fromQk ? deriveFromQk(key, got, sm) : tileFromAttn(key, got, sm);
    });
    // From q and k in the derive worker (the main thread stays free); one-byte weights are quick.
    return (fromQk ? deriveOffThread(key, fromQk, embeddedOf, sm, onMain) : onMain()).then(keep);
  }

  /** A derived chunk, kept for the next request when it is not an error. */
  function keep(c: Chunk): Chunk {
    if (!c.error) decoded.set(c.key, c);
    return c;
  }

  return {
    decoded,
    // save_html wrote the state from the widget's traits, so it holds their types.
    get: <K extends keyof WidgetTraits>(key: K) => values.get(key) as WidgetTraits[K],
    set(key, value) {
      values.set(key, value);
      emit(`change:${key}`, value);
    },
    on(event, cb) {
      let s = handlers.get(event);
      if (!s) { s = new Set(); handlers.set(event, s); }
      s.add(cb);
    },
    off(event, cb) {
      if (!event) { handlers.clear(); return; }
      if (!cb) { handlers.delete(event); return; }
      handlers.get(event)?.delete(cb);
    },
    save_changes() { /* nothing to sync with: the page is the whole world */ },
    send(content) {
      const msg = content as { type?: string; keys?: string[] };
      if (msg?.type !== "request" || !Array.isArray(msg.keys)) return;
      void Promise.all(msg.keys.map(decode)).then((list) => {
        // Already-decoded arrays: pass them through as a chunks message whose
        // buffers are the arrays' bytes, so the glue's decoder runs unchanged.
        const buffers: Uint8Array[] = [];
        const wire = list.map((c) => c.error ? { key: c.key, error: c.error } : {
          key: c.key,
          arrays: Object.entries(c.arrays).map(([name, a]) => {
            buffers.push(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength));
            return { name, dtype: a.dtype, shape: a.shape, buffer: buffers.length - 1, ...(a.rounding ? { rounding: a.rounding } : {}) };
          }),
        });
        emit("msg:custom", { type: "chunks", chunks: wire }, buffers);
      });
    },
  };
}

/**
 * Why a page holds no chunk for `key`. A why-panel split is not left out for size: it is
 * computed by the model in the kernel, and the page holds only the pairs split there.
 */
export function leftOutWords(key: string): string {
  if (keyParts(key)[0] === "why") {
    return "this pair was not split in the notebook, and a saved page has no model to split it: "
      + "in the notebook, open it in the neuron view of a widget given the model "
      + "(show_neuron_view(model, text) or w.explain(model)), then save again.";
  }
  return "not included in this exported page (left out to bound its size)";
}
