// `_meta` is checked before any view mounts (issue 40: saved widget state is untrusted input).
// A notebook's or page's `_meta` may be corrupted or crafted; every number a view sizes
// something by is held to a cap (docs/protocol.md, "Caps") and to the fields it must agree with,
// so one bad value is one message ("this widget's saved state is not valid: ..."), never a
// frozen tab. Lengths that an array in `_meta` itself carries (labels, positions, edges) are
// bounded by that array; the caps bound what no array backs (heads, thumbnail sizes, image sizes)
// and what the views lay out per unit (layers × heads cells, segment rows, image grids).
/** The largest value of each capped `_meta` field (docs/protocol.md, "Caps"). */
export const META_CAPS = {
  /** Tokens on a side (`q_len`, `k_len`, labels): 2^21; 1M-token live widgets stay allowed. */
  tokens: 2 ** 21,
  /** Layers of a stream (`layers`). */
  layers: 1024,
  /** Heads of a stream (`num_heads`). */
  heads: 1024,
  /** Cells of the model view's grid, layers × heads (405B Llama: 126 × 128 = 16128). */
  cells: 2 ** 16,
  /** Streams of one trace (an encoder–decoder has three). */
  streams: 16,
  /** Size of one head's q and k vectors (`head_dim`). */
  headDim: 2 ** 14,
  /** Keys per query of `top:` chunks (`top_k`; Python writes at most 64): the head view decodes a layer's to floats. */
  topK: 1024,
  /** Rows or columns of a thumbnail (`thumb_rows`, `thumb_cols`; Python writes at most 64). */
  thumb: 256,
  /** Segment rows (`segments.edges`; Python offers at most 512). */
  segments: 1024,
  /** Images of `_meta.images`. */
  images: 64,
  /** Grids of one image. */
  grids: 16,
  /** Height or width of an image in pixels, and rows or columns of one grid. */
  imageSide: 4096,
  /** Notes (`notes`), and characters in all of them (a comparison's note lists the tokens left out). */
  notes: 256,
  noteChars: 2 ** 20,
  /** Statistics of `stats:` chunks (`statistics`). */
  statistics: 4096,
  /** Characters of the title. */
  titleChars: 4096,
} as const;

/** Why `_meta` cannot be drawn: what the message shows after "not valid: ". */
class Invalid extends Error {}

type Obj = Record<string, unknown>;

/** A value as the message shows it: numbers as written, anything else by its kind (never its text). */
function shown(v: unknown): string {
  if (typeof v === "number") return String(v);
  if (v === null) return "null";
  if (Array.isArray(v)) return `a list of ${v.length}`;
  return `a ${typeof v}`;
}

function object(path: string, v: unknown): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Invalid(`${path} is ${shown(v)}, not an object`);
  return v as Obj;
}

function list(path: string, v: unknown, cap: number, capName = "cap"): unknown[] {
  if (!Array.isArray(v)) throw new Invalid(`${path} is ${shown(v)}, not a list`);
  if (v.length > cap) throw new Invalid(`${path} has ${v.length} entries, past the ${capName} ${cap}`);
  return v;
}

function whole(path: string, v: unknown, min: number, max: number, maxName = "the cap"): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new Invalid(`${path} ${shown(v)} is not a whole number`);
  if (v < min) throw new Invalid(`${path} ${v} is below ${min}`);
  if (v > max) throw new Invalid(`${path} ${v} is past ${maxName} ${max}`);
  return v;
}

function text(path: string, v: unknown, cap: number): string {
  if (typeof v !== "string") throw new Invalid(`${path} is ${shown(v)}, not a text`);
  if (v.length > cap) throw new Invalid(`${path} has ${v.length} characters, past the cap ${cap}`);
  return v;
}

function texts(path: string, v: unknown, cap: number, capName = "cap"): string[] {
  const out = list(path, v, cap, capName);
  for (const [i, t] of out.entries()) if (typeof t !== "string") throw new Invalid(`${path}[${i}] is ${shown(t)}, not a text`);
  return out as string[];
}

function wholes(path: string, v: unknown, cap: number, min: number, max: number, maxName: string): number[] {
  const out = list(path, v, cap);
  for (const [i, n] of out.entries()) whole(`${path}[${i}]`, n, min, max, maxName);
  return out as number[];
}

const optional = (o: Obj, k: string): boolean => o[k] === undefined || o[k] === null;

/** One side's tokens; returns how many. Every per-token list matches the labels. */
function side(path: string, v: unknown): number {
  const s = object(path, v);
  const n = texts(`${path}.labels`, s.labels, META_CAPS.tokens).length;
  const same = (k: string): unknown[] | null => {
    if (optional(s, k)) return null;
    const l = list(`${path}.${k}`, s[k], META_CAPS.tokens);
    if (l.length !== n) throw new Invalid(`${path}.${k} has ${l.length} entries where ${path}.labels has ${n}`);
    return l;
  };
  same("raw");
  same("continues");
  const kinds = same("kinds");
  for (const [i, k] of (kinds ?? []).entries()) {
    if (k !== "token" && k !== "special" && k !== "padding") throw new Invalid(`${path}.kinds[${i}] is not token, special or padding`);
  }
  const segments = same("segments");
  if (segments) wholes(`${path}.segments`, segments, n, 0, n, "the token count");
  const words = same("words");
  if (words) wholes(`${path}.words`, words, n, 0, n, "the token count");
  return n;
}

interface Shape { layers: number; heads: number; q: number; k: number }

/** One stream: its numbers within the caps and in agreement with its sides. */
function stream(path: string, v: unknown, sides: Map<string, number>): Shape {
  const s = object(path, v);
  const length = (field: string, sideField: string): number => {
    const name = s[sideField];
    const n = typeof name === "string" ? sides.get(name) : undefined;
    if (n === undefined) throw new Invalid(`${path}.${sideField} names no side of the widget`);
    const len = whole(`${path}.${field}`, s[field], 1, META_CAPS.tokens);
    if (len !== n) throw new Invalid(`${path}.${field} ${len} does not match the ${n} tokens of sides.${String(name)}`);
    return len;
  };
  const q = length("q_len", "query_side"), k = length("k_len", "key_side");
  const layers = wholes(`${path}.layers`, s.layers, META_CAPS.layers, 0, 2 ** 20, "the cap").length;
  if (!layers) throw new Invalid(`${path}.layers is empty`);
  const heads = whole(`${path}.num_heads`, s.num_heads, 1, META_CAPS.heads);
  if (layers * heads > META_CAPS.cells) throw new Invalid(`${path} has ${layers} layers × ${heads} heads, past the cap ${META_CAPS.cells} cells`);
  if (!optional(s, "num_kv_heads")) whole(`${path}.num_kv_heads`, s.num_kv_heads, 1, heads, "num_heads");
  if (!optional(s, "head_dim")) whole(`${path}.head_dim`, s.head_dim, 1, META_CAPS.headDim);
  whole(`${path}.thumb_rows`, s.thumb_rows, 1, Math.min(META_CAPS.thumb, q), q < META_CAPS.thumb ? "q_len" : "the cap");
  whole(`${path}.thumb_cols`, s.thumb_cols, 1, Math.min(META_CAPS.thumb, k), k < META_CAPS.thumb ? "k_len" : "the cap");
  whole(`${path}.top_k`, s.top_k, 1, Math.min(k, META_CAPS.topK), k < META_CAPS.topK ? "k_len" : "the cap");
  if (!optional(s, "top_block")) whole(`${path}.top_block`, s.top_block, 1, META_CAPS.tokens);
  if (!optional(s, "pseudo_heads")) {
    const names = texts(`${path}.pseudo_heads`, s.pseudo_heads, 2);
    if (names.some((p, i) => (p !== "mean" && p !== "rollout") || names.indexOf(p) !== i)) throw new Invalid(`${path}.pseudo_heads holds other than "mean" and "rollout" once each`);
  }
  if (!optional(s, "qk_missing")) {
    for (const [i, hs] of list(`${path}.qk_missing`, s.qk_missing, layers, "its layer count").entries()) {
      wholes(`${path}.qk_missing[${i}]`, hs, heads, 0, heads - 1, "the last head");
    }
  }
  return { layers, heads, q, k };
}

function images(v: unknown, shapes: Map<string, Shape>): void {
  const m = object("images", v);
  const sm = typeof m.stream === "string" ? shapes.get(m.stream) : undefined;
  if (!sm) throw new Invalid("images.stream names no stream of the widget");
  wholes("images.queries", m.queries, sm.q, 0, sm.q - 1, "the last query");
  if (!optional(m, "left_out")) whole("images.left_out", m.left_out, 0, sm.q, "q_len");
  let cells = 0;
  for (const [i, im] of list("images.images", m.images, META_CAPS.images).entries()) {
    const path = `images.images[${i}]`, o = object(path, im);
    whole(`${path}.height`, o.height, 1, META_CAPS.imageSide);
    whole(`${path}.width`, o.width, 1, META_CAPS.imageSide);
    for (const [j, g] of list(`${path}.grids`, o.grids, META_CAPS.grids).entries()) {
      const gp = `${path}.grids[${j}]`, grid = object(gp, g);
      const rows = whole(`${gp}.rows`, grid.rows, 1, META_CAPS.imageSide), cols = whole(`${gp}.cols`, grid.cols, 1, META_CAPS.imageSide);
      const positions = list(`${gp}.positions`, grid.positions, sm.k, "k_len");
      if (positions.length !== rows * cols) throw new Invalid(`${gp} is ${rows} × ${cols} cells but has ${positions.length} positions`);
      wholes(`${gp}.positions`, positions, sm.k, 0, sm.k - 1, "the last key");
      if (!optional(grid, "tiles")) {
        const t = list(`${gp}.tiles`, grid.tiles, 2);
        if (t.length !== 2) throw new Invalid(`${gp}.tiles is not (rows, cols)`);
        whole(`${gp}.tiles[0]`, t[0], 1, rows, "its rows");
        whole(`${gp}.tiles[1]`, t[1], 1, cols, "its cols");
      }
      cells += positions.length;
      if (cells > sm.k) throw new Invalid(`images hold ${cells} grid cells, past the ${sm.k} keys of stream ${String(m.stream)}`);
    }
  }
}

function segments(v: unknown, shapes: Map<string, Shape>): void {
  const m = object("segments", v);
  const sm = typeof m.stream === "string" ? shapes.get(m.stream) : undefined;
  if (!sm) throw new Invalid("segments.stream names no stream of the widget");
  const edges = wholes("segments.edges", m.edges, META_CAPS.segments + 1, 0, sm.q, "q_len");
  if (edges.length < 2 || edges[0] !== 0 || edges[edges.length - 1] !== sm.q || edges.some((e, i) => i > 0 && e <= (edges[i - 1] as number))) {
    throw new Invalid(`segments.edges do not rise from 0 to q_len ${sm.q}`);
  }
  const count = edges.length - 1;
  for (const k of ["labels", "titles"]) {
    if (texts(`segments.${k}`, m[k], count, "its segment count").length !== count) throw new Invalid(`segments.${k} has other than ${count} entries`);
  }
}

function generation(v: unknown, shapes: Map<string, Shape>): void {
  const g = object("generation", v);
  const sm = typeof g.stream === "string" ? shapes.get(g.stream) : undefined;
  if (!sm) throw new Invalid("generation.stream names no stream of the widget");
  const prompt = whole("generation.prompt_length", g.prompt_length, 0, sm.q, "q_len");
  whole("generation.generated", g.generated, 0, sm.q - prompt, "the rows after the prompt");
  whole("generation.thumb_rows", g.thumb_rows, 0, META_CAPS.thumb);
  whole("generation.thumb_cols", g.thumb_cols, 0, Math.min(META_CAPS.thumb, sm.k));
}

function comparison(v: unknown, shapes: Map<string, Shape>, source: number | undefined): void {
  const c = object("comparison", v);
  const a = side("comparison.a", c.a), b = side("comparison.b", c.b);
  const pairs = list("comparison.alignment", c.alignment, META_CAPS.tokens);
  if (source !== undefined && pairs.length !== source) throw new Invalid(`comparison.alignment has ${pairs.length} pairs where sides.source has ${source} tokens`);
  for (const [i, p] of pairs.entries()) {
    const pair = list(`comparison.alignment[${i}]`, p, 2);
    whole(`comparison.alignment[${i}][0]`, pair[0], 0, a - 1, "the last token of A");
    whole(`comparison.alignment[${i}][1]`, pair[1], 0, b - 1, "the last token of B");
  }
  for (const field of ["divergence", "ranking"]) {
    for (const [name, per] of Object.entries(object(`comparison.${field}`, c[field]))) {
      const sm = shapes.get(name);
      if (!sm) throw new Invalid(`comparison.${field} names stream ${shown(name)} the widget lacks`);
      const rows = list(`comparison.${field}.${name}`, per, field === "ranking" ? sm.layers * sm.heads : sm.layers, "its size");
      for (const [i, row] of rows.entries()) {
        const r = list(`comparison.${field}.${name}[${i}]`, row, field === "ranking" ? 2 : sm.heads, "its size");
        if (field === "ranking") {
          whole(`comparison.ranking.${name}[${i}][0]`, r[0], 0, sm.layers - 1, "the last layer");
          whole(`comparison.ranking.${name}[${i}][1]`, r[1], 0, sm.heads - 1, "the last head");
        }
      }
    }
  }
}

/** Throws Invalid for the first field of `meta` that is out of bounds or out of step. */
function check(value: unknown): void {
  const meta = object("_meta", value);
  const sides = new Map<string, number>();
  for (const [name, s] of Object.entries(object("sides", meta.sides))) {
    if (s !== null) sides.set(name, side(`sides.${name}`, s));
  }
  const streams = Object.entries(object("streams", meta.streams));
  if (!streams.length) throw new Invalid("streams is empty");
  if (streams.length > META_CAPS.streams) throw new Invalid(`streams has ${streams.length} entries, past the cap ${META_CAPS.streams}`);
  const shapes = new Map(streams.map(([name, s]) => [name, stream(`streams.${name}`, s, sides)]));
  if (!optional(meta, "title")) text("title", meta.title, META_CAPS.titleChars);
  if (!optional(meta, "neuron_unavailable")) text("neuron_unavailable", meta.neuron_unavailable, META_CAPS.titleChars);
  if (!optional(meta, "notes")) {
    const all = texts("notes", meta.notes, META_CAPS.notes).reduce((n, t) => n + t.length, 0);
    if (all > META_CAPS.noteChars) throw new Invalid(`notes hold ${all} characters, past the cap ${META_CAPS.noteChars}`);
  }
  if (!optional(meta, "views")) texts("views", meta.views, 8);
  if (!optional(meta, "statistics")) {
    for (const [i, s] of list("statistics", meta.statistics, META_CAPS.statistics).entries()) text(`statistics[${i}].name`, object(`statistics[${i}]`, s).name, META_CAPS.titleChars);
  }
  if (!optional(meta, "images")) images(meta.images, shapes);
  if (!optional(meta, "segments")) segments(meta.segments, shapes);
  if (!optional(meta, "generation")) generation(meta.generation, shapes);
  if (!optional(meta, "comparison")) comparison(meta.comparison, shapes, sides.get("source"));
}

/**
 * Why `meta` cannot be drawn (the first field out of its cap or out of step with another,
 * as "streams.self.num_heads 1000000000 is past the cap 1024"), or null when it can.
 * The check reads each list once: its time is that of reading `_meta`.
 */
export function metaProblem(meta: unknown): string | null {
  try {
    check(meta);
    return null;
  } catch (e) {
    if (e instanceof Invalid) return e.message;
    throw e;
  }
}
