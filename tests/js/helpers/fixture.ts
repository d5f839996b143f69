// A tiny trace computed in JS, served as protocol chunks (docs/protocol.md).
import type { AppState, Meta, TokenKind } from "../../../js/wire/types";
import { DEFAULT_SELECTION } from "../../../js/selection";
import type { WidgetTraits } from "../../../js/traits";
import { createStore } from "../../../js/state";
import { createChunkSource, decodeChunks, type ChunksMessage } from "../../../js/data";

export interface FixtureOptions {
  layers?: number; heads?: number; tokens?: number; dim?: number | null; segments?: boolean; seed?: number;
  kvHeads?: number; bias?: boolean;
  /** Add a `cross` stream: this many target-side queries over the source keys. */
  target?: number;
  /** Keys per query in top chunks (default: all). */
  topK?: number;
  /** A trace of a generation: the last this many tokens were generated (`_meta.generation`). */
  generated?: number;
  /** Announce `top_block` (rows per `top:<stream>:<layer>:<first row>` block) and serve such blocks. */
  topBlock?: number;
}

export interface WireArray { name: string; dtype: "u8" | "u16" | "u32" | "f32"; shape: number[]; bytes: Uint8Array }

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32; };
}
const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

interface StreamData { Q: number; K: number; q: Float32Array[][]; k: Float32Array[][]; att: Float32Array[][]; bias: Float32Array[][] | null }

export interface Fixture {
  meta: Meta;
  L: number; H: number; N: number; D: number;
  q: Float32Array[][]; k: Float32Array[][]; att: Float32Array[][]; bias: Float32Array[][] | null;
  streams: Record<string, StreamData>;
  chunk(key: string): { key: string; arrays?: WireArray[]; error?: string };
  message(keys: string[]): { content: ChunksMessage; buffers: Uint8Array[] };
}

export function makeFixture(o: FixtureOptions = {}): Fixture {
  const L = o.layers ?? 2, H = o.heads ?? 3, N = o.tokens ?? 6, D = o.dim === null ? 4 : o.dim ?? 4;
  const KV = o.kvHeads ?? H;
  const r = rng(o.seed ?? 7);
  const labels = Array.from({ length: N }, (_, i) => (i === 0 ? "[CLS]" : i === N - 1 ? "[PAD]" : `tok${i}`));
  const kinds: TokenKind[] = labels.map((l) => (l === "[CLS]" ? "special" : l === "[PAD]" ? "padding" : "token"));
  const segments = o.segments ? labels.map((_, i) => (i < N / 2 ? 0 : 1)) : null;
  const scaling = 1 / Math.sqrt(D);

  /** Random q/k and their softmax attention for a (Q queries × K keys) stream. */
  function buildStream(Q: number, K: number): StreamData {
    const out: StreamData = { Q, K, q: [], k: [], att: [], bias: o.bias ? [] : null };
    for (let l = 0; l < L; l++) {
      out.q.push([]); out.k.push([]); out.att.push([]); out.bias?.push([]);
      const kv = Array.from({ length: KV }, () => Float32Array.from({ length: K * D }, () => (r() - 0.5) * 4));
      for (let h = 0; h < H; h++) {
        const qh = Float32Array.from({ length: Q * D }, () => (r() - 0.5) * 4);
        const kh = kv[Math.floor(h / (H / KV))] as Float32Array;
        const bh = o.bias ? Float32Array.from({ length: Q * K }, () => r() - 0.5) : null;
        const a = new Float32Array(Q * K);
        for (let i = 0; i < Q; i++) {
          const s: number[] = [];
          for (let j = 0; j < K; j++) {
            let dot = 0;
            for (let d = 0; d < D; d++) dot += (qh[i * D + d] as number) * (kh[j * D + d] as number);
            s.push(dot * scaling + (bh ? (bh[i * K + j] as number) : 0));
          }
          const m = Math.max(...s);
          const e = s.map((x) => Math.exp(x - m));
          const z = e.reduce((x, y) => x + y, 0);
          e.forEach((x, j) => { a[i * K + j] = x / z; });
        }
        out.q[l]!.push(qh); out.k[l]!.push(kh); out.att[l]!.push(a); if (out.bias) out.bias[l]!.push(bh as Float32Array);
      }
    }
    return out;
  }

  const streams: Record<string, StreamData> = { self: buildStream(N, N) };
  const T = o.target ?? 0;
  const targetLabels = Array.from({ length: T }, (_, i) => `out${i}`);
  if (T) streams.cross = buildStream(T, N);
  const streamMeta = (name: string, sd: StreamData, qSide: string) => ({
    label: name === "self" ? "self-attention" : "cross-attention", query_side: qSide, key_side: "source",
    layers: Array.from({ length: L }, (_, i) => i), num_heads: H, num_kv_heads: KV,
    q_len: sd.Q, k_len: sd.K, head_dim: o.dim === null ? null : D,
    has_bias: !!o.bias, has_mask: false, has_softcap: false, has_sinks: false,
    thumb_rows: sd.Q, thumb_cols: sd.K, top_k: Math.min(o.topK ?? sd.K, sd.K),
    ...(o.topBlock ? { top_block: o.topBlock } : {}),
  });
  const meta: Meta = {
    protocol: 1,
    title: `fixture · ${L} layers × ${H} heads`,
    sides: {
      source: { labels, raw: labels.map((x) => `raw:${x}`), kinds, segments },
      target: T ? { labels: targetLabels, raw: targetLabels, kinds: targetLabels.map(() => "token" as const), segments: null } : null,
    },
    streams: Object.fromEntries(Object.entries(streams).map(([name, sd]) => [name, streamMeta(name, sd, name === "self" ? "source" : "target")])),
    neuron_unavailable: null,
    notes: [],
    embedded: false,
    generation: o.generated ? { stream: "self", prompt_length: N - o.generated, generated: o.generated, thumb_rows: o.generated, thumb_cols: N } : null,
  };

  /** A block of a `top:` chunk: its arrays' rows `first ..` (`top_block` of them), as Python cuts them. */
  function topBlock(key: string, first: number): { key: string; arrays?: WireArray[]; error?: string } {
    const p = key.split(":");
    const whole = chunk(p.slice(0, 3).join(":"));
    if (whole.error || !o.topBlock) return { key, error: whole.error ?? "this fixture serves no blocks" };
    if (first % o.topBlock) return { key, error: `first row ${first} does not start a block` };
    const Q = (streams[p[1] ?? ""] as StreamData).Q;
    if (!(first < Q)) return { key, error: `first row ${first} is out of range` };
    const R = Math.min(o.topBlock, Q - first);
    return { key, arrays: (whole.arrays ?? []).map((a) => {
      const [H, , T = 1] = a.shape as [number, number, number?];
      const size = a.bytes.byteLength / (H * Q * T);
      const bytes = new Uint8Array(H * R * T * size);
      for (let h = 0; h < H; h++) bytes.set(a.bytes.subarray(((h * Q + first) * T) * size, ((h * Q + first + R) * T) * size), h * R * T * size);
      return { ...a, shape: a.shape.length === 3 ? [H, R, T] : [H, R], bytes };
    }) };
  }

  function chunk(key: string): { key: string; arrays?: WireArray[]; error?: string } {
    const p = key.split(":");
    if (p[0] === "top" && p.length === 4) return topBlock(key, Number(p[3]));
    const l = Number(p[2]), h = Number(p[3]);
    const sd = streams[p[1] ?? ""];
    if (!sd) return { key, error: "unknown stream" };
    const { Q, K, att } = sd;
    if (p[0] === "thumbs") {
      const from = Number(p[2] ?? 0), R = Q - from; // thumbs:<stream>:<first row>: those rows on
      const t = new Uint8Array(L * H * R * K);
      for (let li = 0; li < L; li++) for (let hi = 0; hi < H; hi++) {
        const a = att[li]![hi]!.subarray(from * K);
        const mx = Math.max(...a);
        a.forEach((v, i) => { t[(li * H + hi) * R * K + i] = Math.round((255 * v) / mx); });
      }
      return { key, arrays: [{ name: "thumbs", dtype: "u8", shape: [L, H, R, K], bytes: t }] };
    }
    if (!(l >= 0 && l < L)) return { key, error: `no layer ${p[2]}` };
    if (p[0] === "top") {
      const TK = Math.min(o.topK ?? K, K);
      const index = new Uint16Array(H * Q * TK), weight = new Uint8Array(H * Q * TK), rowmax = new Float32Array(H * Q);
      for (let hi = 0; hi < H; hi++) for (let i = 0; i < Q; i++) {
        const row = Array.from(att[l]![hi]!.subarray(i * K, (i + 1) * K));
        const order = row.map((_, j) => j).sort((a, b) => (row[b] as number) - (row[a] as number)).slice(0, TK);
        const rm = row[order[0] as number] as number;
        rowmax[hi * Q + i] = rm;
        order.forEach((j, t) => { index[(hi * Q + i) * TK + t] = j; weight[(hi * Q + i) * TK + t] = Math.round((255 * (row[j] as number)) / rm); });
      }
      if (TK === K) {
        // As Python sends it when every key is kept: weights in key order, no index.
        const inOrder = new Uint8Array(H * Q * K);
        for (let hi = 0; hi < H; hi++) for (let i = 0; i < Q; i++) {
          const at = (hi * Q + i) * K;
          for (let t = 0; t < K; t++) inOrder[at + (index[at + t] as number)] = weight[at + t] as number;
        }
        return { key, arrays: [
          { name: "weight", dtype: "u8", shape: [H, Q, K], bytes: inOrder },
          { name: "rowmax", dtype: "f32", shape: [H, Q], bytes: bytesOf(rowmax) },
        ] };
      }
      return { key, arrays: [
        { name: "index", dtype: "u16", shape: [H, Q, TK], bytes: bytesOf(index) },
        { name: "weight", dtype: "u8", shape: [H, Q, TK], bytes: weight },
        { name: "rowmax", dtype: "f32", shape: [H, Q], bytes: bytesOf(rowmax) },
      ] };
    }
    if (!(h >= 0 && h < H)) return { key, error: `no head ${p[3]}` };
    if (p[0] === "attn") {
      const a = att[l]![h]!, weight = new Uint8Array(Q * K), rowmax = new Float32Array(Q);
      for (let i = 0; i < Q; i++) {
        const rm = Math.max(...a.subarray(i * K, (i + 1) * K));
        rowmax[i] = rm;
        for (let j = 0; j < K; j++) weight[i * K + j] = Math.round((255 * (a[i * K + j] as number)) / rm);
      }
      return { key, arrays: [
        { name: "weight", dtype: "u8", shape: [Q, K], bytes: weight },
        { name: "rowmax", dtype: "f32", shape: [Q], bytes: bytesOf(rowmax) },
      ] };
    }
    if (p[0] === "qk") {
      if (o.dim === null) return { key, error: "no q/k recorded" };
      const arrays: WireArray[] = [
        { name: "q", dtype: "f32", shape: [Q, D], bytes: bytesOf(sd.q[l]![h]!) },
        { name: "k", dtype: "f32", shape: [K, D], bytes: bytesOf(sd.k[l]![h]!) },
        { name: "scaling", dtype: "f32", shape: [1], bytes: bytesOf(Float32Array.of(scaling)) },
        { name: "kv_head", dtype: "u32", shape: [1], bytes: bytesOf(Uint32Array.of(Math.floor(h / (H / KV)))) },
      ];
      if (sd.bias) arrays.push({ name: "bias", dtype: "f32", shape: [Q, K], bytes: bytesOf(sd.bias[l]![h]!) });
      return { key, arrays };
    }
    return { key, error: `unknown key ${key}` };
  }

  function message(keys: string[]): { content: ChunksMessage; buffers: Uint8Array[] } {
    const buffers: Uint8Array[] = [];
    const chunks = keys.map((key) => {
      const c = chunk(key);
      if (c.error) return { key, error: c.error };
      return { key, arrays: (c.arrays ?? []).map((a) => { buffers.push(a.bytes); return { name: a.name, dtype: a.dtype, shape: a.shape, buffer: buffers.length - 1 }; }) };
    });
    return { content: { type: "chunks", chunks }, buffers };
  }

  const self = streams.self as StreamData;
  return { meta, L, H, N, D, q: self.q, k: self.k, att: self.att, bias: self.bias, streams, chunk, message };
}

/** A store + DataSource for driving a view directly. */
export function viewContext(f: Fixture, patch: Partial<AppState> = {}) {
  const store = createStore<AppState>({
    ...DEFAULT_SELECTION, stream: "self", heads: Array.from({ length: f.H }, (_, i) => i), theme: "light",
    resolved_theme: "light", theme_rev: 0, ...patch,
  });
  const requested: string[][] = [];
  const data = createChunkSource((keys) => {
    requested.push(keys);
    queueMicrotask(() => {
      const m = f.message(keys);
      data.receive(decodeChunks(m.content, m.buffers));
    });
  });
  const root = document.createElement("div");
  document.body.append(root);
  return { meta: f.meta, store, data, root, requested };
}

/** Wait until `cond` holds (polling microtasks and timers), or fail. */
export async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 1));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: stands in for anywidget's model.on, which takes any callback
export type Handler = (...args: any[]) => void;

/** An anywidget-like model; answers requests like the kernel would. */
export function mockModel(f: Fixture, traits: Record<string, unknown> = {}, opts: { colab?: boolean; offset?: boolean } = {}) {
  const values = new Map<string, unknown>(Object.entries({
    _meta: f.meta, view: "head", stream: "self", layer: 0, heads: Array.from({ length: f.H }, (_, i) => i), head: 0,
    query: null, key: null, pair_filter: "all", theme: "light", ...traits,
  }));
  const handlers = new Map<string, Set<Handler>>();
  const log = { on: 0, off: 0, sent: [] as unknown[], saves: 0, sets: [] as [string, unknown][] };
  const emit = (ev: string, ...a: unknown[]): void => { for (const fn of [...(handlers.get(ev) ?? [])]) fn(...a); };
  const model = {
    log,
    handlers,
    // Typed as anywidget types its model, so tests pass it where the widget expects one.
    get: <K extends keyof WidgetTraits>(k: K) => values.get(k) as WidgetTraits[K],
    set: <K extends keyof WidgetTraits>(k: K, v: WidgetTraits[K]) => { values.set(k, v); log.sets.push([k, v]); emit(`change:${k}`); },
    on: (ev: string, fn: Handler) => { log.on++; let s = handlers.get(ev); if (!s) { s = new Set(); handlers.set(ev, s); } s.add(fn); },
    off: (ev?: string | null, fn?: Handler | null) => { log.off++; if (ev && fn) handlers.get(ev)?.delete(fn); },
    save_changes: () => { log.saves++; },
    send: (content: { type: string; keys: string[] }) => {
      log.sent.push(content);
      setTimeout(() => {
        const m = f.message(content.keys);
        const buffers = m.buffers.map((b) => {
          if (opts.colab) return new Uint8Array(b);
          // JupyterLab: DataViews into a larger buffer, at an odd offset.
          const big = new Uint8Array(b.byteLength + (opts.offset ? 3 : 0));
          big.set(b, opts.offset ? 3 : 0);
          return new DataView(big.buffer, opts.offset ? 3 : 0, b.byteLength);
        });
        emit("msg:custom", m.content, buffers);
      }, 0);
    },
    /** Python-side trait change. */
    kernelSet: (k: string, v: unknown) => { values.set(k, v); emit(`change:${k}`); },
    listenerCount: () => [...handlers.values()].reduce((n, s) => n + s.size, 0),
  };
  return model;
}
