// Shapes shared by the glue, the host and the views (see docs/protocol.md).

export type TokenKind = "token" | "special" | "padding";

export interface SideMeta {
  labels: string[];
  raw?: string[];
  kinds?: TokenKind[];
  segments?: number[] | null;
}

export interface StreamMeta {
  label?: string;
  query_side: string;
  key_side: string;
  layers: number[];
  num_heads: number;
  num_kv_heads?: number;
  q_len: number;
  k_len: number;
  head_dim: number | null;
  has_bias?: boolean;
  has_mask?: boolean;
  has_softcap?: boolean;
  has_sinks?: boolean;
  thumb_rows: number;
  thumb_cols: number;
  top_k: number;
}

export interface Meta {
  protocol?: number;
  title?: string;
  sides: Record<string, SideMeta | null>;
  streams: Record<string, StreamMeta>;
  neuron_unavailable?: string | null;
  notes?: string[];
  embedded?: boolean;
  /** The views offered, in tab order; absent (older pages): all three. */
  views?: ViewName[];
}

export type ViewName = "head" | "model" | "neuron";
export type PairFilter = "all" | "AA" | "AB" | "BA" | "BB";
export type ThemeSetting = "auto" | "light" | "dark";

/**
 * The synced selection: one field per trait, as the store holds it (`stream`
 * resolved). Its fields are the schema's (js/selection.ts fails to compile otherwise).
 */
export interface Selection {
  view: ViewName;
  stream: string;
  layer: number;
  heads: number[];
  head: number;
  query: number | null;
  key: number | null;
  pair_filter: PairFilter;
  theme: ThemeSetting;
}

/** Selection plus state that lives only in the browser. */
export interface AppState extends Selection {
  /** The theme actually used ("auto" resolved against the host). */
  resolved_theme: "light" | "dark";
  /** Bumped whenever the colours may have changed (theme trait, host theme): views re-read them. */
  theme_rev: number;
}

export type DType = "u8" | "u16" | "u32" | "f32";
export type TypedArray = Uint8Array | Uint16Array | Uint32Array | Float32Array;

export interface NDArray {
  dtype: DType;
  shape: number[];
  data: TypedArray;
}

/** One decoded chunk; `error` set when Python (or the page) could not provide it. */
export interface Chunk {
  key: string;
  arrays: Record<string, NDArray>;
  error?: string;
}

export interface DataSource {
  /** Resolve with every asked-for key (errors included), from cache when possible. */
  request(keys: string[]): Promise<Map<string, Chunk>>;
  /** The chunk if it is already cached. */
  peek(key: string): Chunk | undefined;
}

export interface Store<S> {
  get(): S;
  set(patch: Partial<S>): void;
  /** Called with the keys that changed; returns the unsubscribe function. */
  subscribe(fn: (changed: Set<keyof S>, state: S) => void): () => void;
}

/** What every view receives. Views know nothing about Jupyter. */
export interface ViewContext {
  meta: Meta;
  store: Store<AppState>;
  data: DataSource;
  root: HTMLElement;
}

export type Cleanup = () => void;
