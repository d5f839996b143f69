// Shapes shared by the glue, the host and the views (see docs/protocol.md). The `_meta`
// interfaces mirror src/attnscope/encode/meta_types.py field for field (tests/test_wire_meta_types.py).

/** An array's spec; `encoding: "f16-shuffled"` (exported pages only): the page holds its values
 * as float16, all high bytes then all low bytes, decoded (js/data.ts) to the f32 `dtype` it names. */
export interface ArraySpec { name: string; dtype: DType; shape: number[]; encoding?: string; rounding?: number }

/** A chunk as the exported page and the saved state embed it: deflate-raw bytes as base64. */
export interface EmbeddedChunk { arrays?: ArraySpec[]; data?: string; error?: string }

export type TokenKind = "token" | "special" | "padding";

export interface SideMeta {
  labels: string[];
  raw?: string[];
  kinds?: TokenKind[];
  segments?: number[] | null;
  /** Per token: a piece that continues the word before it (`##bel`); absent in older pages. */
  continues?: boolean[];
  /** The word each token belongs to, numbered 0, 1, ... (attnscope.analysis.word_ids). */
  words?: number[];
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
  /** No query sees a later key (causal or sliding-window causal self-attention, from the mask rule): the last ordinary query sees the most of the input and the views open on it. False or absent (bidirectional, cross-attention, weights with no mask rule, older pages): they open on the first. */
  causal?: boolean;
  thumb_rows: number;
  thumb_cols: number;
  top_k: number;
  /** Query rows per `top:<stream>:<layer>:<first row>` block; null or absent: whole-layer `top:` chunks only (exported pages, comparisons, older pages). */
  top_block?: number | null;
  /** The pseudo-heads of `pseudo:` chunks, in chunk order ("mean", then "rollout" where it applies). */
  pseudo_heads?: string[];
  /** An exported page that left some heads' q and k out: per layer position, those heads (absent: none). */
  qk_missing?: number[][];
  /** The live head view offers the rollout of its locked query (`pseudo:<s>:<l>:<query>`): long self-attention. */
  rollout_query?: boolean;
  /** The trace holds value norms (`capture(..., value_norms=True)`): `vnorm:<s>:<l>` chunks answer. */
  has_value_norms?: boolean;
}

/** One head statistic of the `stats:` chunk (attnscope.analysis.STATISTICS). */
export interface StatisticMeta {
  name: string;
  label: string;
  formula: string;
  source: string;
  /** A scan's statistic (widget `scan=`): the array in the same chunk holding each head's spread across inputs. */
  spread?: string;
  /** A scan's statistic: how many inputs (or runs) each head's value is the mean over. */
  inputs?: number;
  /** What `inputs` counts: "inputs" (a scan) or "runs" (a needle-in-a-haystack table). */
  over?: string;
  /** A scan over inputs: the array holding the input where each head is strongest (NaN: none). */
  strongest?: string;
}

export interface Meta {
  protocol?: number;
  title?: string;
  sides: Record<string, SideMeta | null>;
  streams: Record<string, StreamMeta>;
  neuron_unavailable?: string | null;
  notes?: string[];
  embedded?: boolean;
  /** The statistics of `stats:` chunks, in array order; absent in older pages. */
  statistics?: StatisticMeta[];
  /** The views offered, in tab order; absent (older pages): all three. */
  views?: ViewName[];
  /** Set when the widget shows a comparison of two inputs (docs/protocol.md, "Comparisons"). */
  comparison?: ComparisonMeta | null;
  /** A trace of a generation: where the prompt ends; absent or null otherwise. */
  generation?: GenerationMeta | null;
  /** A vision-language model's images (docs/protocol.md, "Images"); absent or null without images. */
  images?: ImagesMeta | null;
  /** A widget made with `segments=`: the head view's segment rows (docs/protocol.md, "_meta"); absent or null otherwise. */
  segments?: SegmentsMeta | null;
}

/** `_meta.segments`: how one stream's tokens are split into sentences, turns or given positions. */
export interface SegmentsMeta {
  stream: string;
  /** "sentences", "turns", "positions", or "images" (each image one row, every other token its own). */
  by: string;
  /** `[0, s1, ..., n]`: segment i is tokens edges[i] .. edges[i + 1] - 1. */
  edges: number[];
  /** Each segment's first words, cut short. */
  labels: string[];
  /** Each segment's hover text: its token range and text. */
  titles: string[];
}

/** One grid of an image's tokens: the whole grid ("image") or an extra one ("overview"). */
export interface ImageGridMeta {
  name: string;
  rows: number;
  cols: number;
  /** (rows, cols) of tiles the grid is made of, or null. */
  tiles: [number, number] | null;
  /** Token positions of the cells, row by row. */
  positions: number[];
}

/** `_meta.images`: the stream, the query rows of `image:` chunks, and each image's size and grids. */
export interface ImagesMeta {
  stream: string;
  /** Token positions of the rows of an `image:` chunk (every token that shows no image, or the last that fit). */
  queries: number[];
  /** Earlier text tokens not offered as queries (the chunk's byte cap); absent or 0: none. */
  left_out?: number;
  images: { height: number; width: number; grids: ImageGridMeta[] }[];
}

/** What `_meta.comparison` says about two inputs shown over their aligned tokens. */
export interface ComparisonMeta {
  /** Each input's own tokens, all of them. */
  a: SideMeta;
  b: SideMeta;
  /** (position in A, position in B) of each aligned pair: row i of the views is pair i. */
  alignment: [number, number][];
  /** Per stream, per (layer position, head): mean Jensen–Shannon divergence of aligned rows, nats; null: no row to compare. */
  divergence: Record<string, (number | null)[][]>;
  /** Per stream, every (layer position, head), the most changed first. */
  ranking: Record<string, [number, number][]>;
}

/** `_meta.generation` (docs/protocol.md): the prompt, then what the model generated. */
export interface GenerationMeta {
  /** The stream over prompt + generated tokens. */
  stream: string;
  prompt_length: number;
  /** How many tokens were generated (rows prompt_length .. prompt_length + generated - 1). */
  generated: number;
  /** Size of the `thumbs:<stream>:<prompt_length>` thumbnails (the generated rows). */
  thumb_rows: number;
  thumb_cols: number;
}

export type ViewName = "head" | "model" | "neuron" | "image";
export type PairFilter = "all" | "AA" | "AB" | "BA" | "BB";
export type ThemeSetting = "auto" | "light" | "dark";
/** A comparison's side: input A, input B, or A − B. */
export type CompareSide = "a" | "b" | "diff";

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
  /** A comparison's side shown; null on a single trace (and on a comparison, null means "diff"). */
  compare_side: CompareSide | null;
  /** Generation step shown (0 = first generated token), or null. */
  step: number | null;
  /** Model view: only the generated tokens' rows. */
  generated_only: boolean;
  /** Model view: the statistic that badges cells and orders each layer's heads; null for none. */
  rank_by: string | null;
  /** Head view: pseudo-heads ("mean", "rollout") drawn beside the selected heads. */
  pseudo_heads: string[];
  /** Head view: query tokens whose attention is summed (shift-click); [] for the single query. */
  queries: number[];
  /** Head view: rows are words; `query`/`queries` keep token indices (a word's first piece). */
  words: boolean;
  /** Head view: hide the first and special tokens, renormalising each row over the keys left. */
  hide_special: boolean;
  /** Head view: opacity and bars on a log scale. */
  log_scale: boolean;
  /** Head view of a widget with `_meta.segments`: rows are segments (by "images": each image one row), or tokens. */
  segment_rows: boolean;
  /** Head and model views: weights α_ij‖f_h(x_j)‖ renormalised per row, where the stream has value norms. */
  value_weighted: boolean;
}

/** Selection plus state that lives only in the browser. */
export interface AppState extends Selection {
  /** The theme actually used ("auto" resolved against the host). */
  resolved_theme: "light" | "dark";
  /** Bumped whenever the colours may have changed (theme trait, host theme): views re-read them. */
  theme_rev: number;
  /** A comparison's model view: cells by layer and head, or most changed first (absent: by layer). */
  grid_order?: "layers" | "divergence";
}

/** Array element types by bits: "i8" is a signed byte (a comparison's A − B). */
export type DType = "i8" | "u8" | "u16" | "u32" | "f32";
export type TypedArray = Int8Array | Uint8Array | Uint16Array | Uint32Array | Float32Array;

export interface NDArray {
  dtype: DType;
  shape: number[];
  data: TypedArray;
  /** Relative rounding the values carry beyond their dtype (2^-11 when they travelled as float16). */
  rounding?: number;
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
  /** In a comparison, the side this view draws (its `data` serves that side's chunks); absent otherwise. */
  side?: CompareSide;
}

export type Cleanup = () => void;
