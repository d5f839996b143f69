// Saved state is untrusted input (issue 40): `_meta` is held to its caps and to itself before any
// view mounts; one bad value is one message naming the field, the value and the cap.
import widget from "../../js/widget";
import { META_CAPS, metaProblem } from "../../js/wire/validate_meta";
import type { Meta } from "../../js/wire/types";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, mockModel } from "./helpers/fixture";

// biome-ignore lint/suspicious/noExplicitAny: the tests edit _meta as loose JSON, as a crafted notebook would
type Loose = any;

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

/** A fixture's `_meta` (deep copy), changed by `edit`. */
function edited(edit: (m: Loose) => void, fx = {}): Meta {
  const meta = structuredClone(makeFixture({ layers: 2, heads: 3, tokens: 6, ...fx }).meta) as Loose;
  edit(meta);
  return meta as Meta;
}

const withImages = (m: Loose): void => {
  m.images = { stream: "self", queries: [0, 5], left_out: 0, images: [{ height: 8, width: 8, grids: [{ name: "image", rows: 2, cols: 2, tiles: null, positions: [1, 2, 3, 4] }] }] };
};

describe("_meta validation", () => {
  it("passes what Python writes: single traces, cross-attention, generations, blocks, images, segments", () => {
    for (const fx of [{}, { target: 4 }, { generated: 2 }, { topBlock: 16, tokens: 40 }, { dim: null }, { segments: true }]) {
      expect(metaProblem(makeFixture(fx).meta)).toBeNull();
    }
    expect(metaProblem(edited(withImages))).toBeNull();
    expect(metaProblem(edited((m) => { m.segments = { stream: "self", by: "sentences", edges: [0, 2, 6], labels: ["a", "b"], titles: ["a", "b"] }; }))).toBeNull();
  });

  it("names the field, its value and the cap for each capped number", () => {
    const cases: [(m: Loose) => void, string][] = [
      [(m) => { m.streams.self.num_heads = 1e9; }, "streams.self.num_heads 1000000000 is past the cap 1024"],
      [(m) => { m.streams.self.num_heads = META_CAPS.heads + 1; }, "streams.self.num_heads 1025 is past the cap 1024"],
      [(m) => { m.streams.self.q_len = 1e9; }, "streams.self.q_len 1000000000 is past the cap 2097152"],
      [(m) => { m.streams.self.k_len = 7; }, "streams.self.k_len 7 does not match the 6 tokens of sides.source"],
      [(m) => { m.streams.self.layers = Array.from({ length: 200_000 }, (_, i) => i); }, "streams.self.layers has 200000 entries, past the cap 1024"],
      [(m) => { m.streams.self.layers = Array.from({ length: 1000 }, (_, i) => i); m.streams.self.num_heads = 100; }, "streams.self has 1000 layers × 100 heads, past the cap 65536 cells"],
      [(m) => { m.streams.self.head_dim = 2 ** 20; }, "streams.self.head_dim 1048576 is past the cap 16384"],
      [(m) => { m.streams.self.thumb_rows = 300; }, "streams.self.thumb_rows 300 is past q_len 6"],
      [(m) => { m.streams.self.top_k = 7; }, "streams.self.top_k 7 is past k_len 6"],
      [(m) => { m.streams.self.top_k = -1; }, "streams.self.top_k -1 is below 1"],
      [(m) => { m.streams.self.top_k = 2.5; }, "streams.self.top_k 2.5 is not a whole number"],
      [(m) => { m.streams.self.num_heads = "12"; }, "streams.self.num_heads a string is not a whole number"],
      [(m) => { m.streams.self.num_kv_heads = 4; }, "streams.self.num_kv_heads 4 is past num_heads 3"],
      [(m) => { m.streams.self.query_side = "nowhere"; }, "streams.self.query_side names no side of the widget"],
      [(m) => { m.sides.source.raw = ["x"]; }, "sides.source.raw has 1 entries where sides.source.labels has 6"],
      [(m) => { m.sides.source.kinds[0] = "<b>"; }, "sides.source.kinds[0] is not token, special or padding"],
      [(m) => { m.notes = Array.from({ length: 300 }, () => "n"); }, "notes has 300 entries, past the cap 256"],
      [(m) => { m.notes = ["x".repeat(2 ** 19), "y".repeat(2 ** 19 + 1)]; }, "notes hold 1048577 characters, past the cap 1048576"],
      [(m) => { m.notes = ["x", 5]; }, "notes[1] is 5, not a text"],
      [(m) => { m.title = 5; }, "title is 5, not a text"],
      [(m) => { m.streams = {}; }, "streams is empty"],
      [(m) => { m.sides = null; }, "sides is null, not an object"],
    ];
    for (const [edit, message] of cases) expect(metaProblem(edited(edit))).toBe(message);
  });

  it("holds images, segments, generations and comparisons to their streams", () => {
    const image = (edit: (g: Loose) => void) => edited((m) => { withImages(m); edit(m.images); });
    expect(metaProblem(image((i) => { i.images[0].grids[0].rows = 1e6; i.images[0].grids[0].cols = 1e6; }))).toBe("images.images[0].grids[0].rows 1000000 is past the cap 4096");
    expect(metaProblem(image((i) => { i.images[0].grids[0].rows = 3; }))).toBe("images.images[0].grids[0] is 3 × 2 cells but has 4 positions");
    expect(metaProblem(image((i) => { i.images[0].grids[0].positions[0] = 99; }))).toBe("images.images[0].grids[0].positions[0] 99 is past the last key 5");
    expect(metaProblem(image((i) => { i.images[0].height = 1e6; }))).toBe("images.images[0].height 1000000 is past the cap 4096");
    expect(metaProblem(image((i) => { i.queries = [0, 6]; }))).toBe("images.queries[1] 6 is past the last query 5");
    expect(metaProblem(image((i) => { i.stream = "cross"; }))).toBe("images.stream names no stream of the widget");
    const segs = (edges: number[]) => edited((m) => { m.segments = { stream: "self", by: "positions", edges, labels: edges.slice(1).map(String), titles: edges.slice(1).map(String) }; });
    expect(metaProblem(segs([0, 3, 3, 6]))).toBe("segments.edges do not rise from 0 to q_len 6");
    expect(metaProblem(segs(Array.from({ length: 100_001 }, (_, i) => i)))).toBe("segments.edges has 100001 entries, past the cap 1025");
    expect(metaProblem(edited((m) => { m.generation.generated = 5; }, { generated: 2 }))).toBe("generation.generated 5 is past the rows after the prompt 2");
    const comparison = (alignment: number[][]) => edited((m) => {
      m.comparison = { a: m.sides.source, b: m.sides.source, alignment, divergence: { self: [[0, 0, 0], [0, 0, 0]] }, ranking: { self: [[0, 1]] } };
    });
    expect(metaProblem(comparison([0, 1, 2, 3, 4, 5].map((i) => [i, i])))).toBeNull();
    expect(metaProblem(comparison([[0, 0]]))).toBe("comparison.alignment has 1 pairs where sides.source has 6 tokens");
    expect(metaProblem(comparison([0, 1, 2, 3, 4, 9].map((i) => [i, i])))).toBe("comparison.alignment[5][0] 9 is past the last token of A 5");
  });

  it("lets 1M-token widgets through: the cap is on what a stream claims, not on real lengths", () => {
    const n = 2 ** 20;
    const meta = edited((m) => {
      m.sides.source = { labels: Array.from({ length: n }, () => "t") };
      Object.assign(m.streams.self, { q_len: n, k_len: n, thumb_rows: 64, thumb_cols: 64, top_k: 64, top_block: 64 });
    });
    const t0 = performance.now();
    expect(metaProblem(meta)).toBeNull();
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it("shows one box in place of the widget, and no view, on a _meta past a cap", () => {
    const f = makeFixture({ layers: 2, heads: 3 });
    const model = mockModel(f, { _meta: edited((m) => { m.streams.self.num_heads = 1e9; }) });
    const el = document.createElement("div");
    document.body.append(el);
    widget.render({ model, el });
    const box = el.querySelector('[data-testid="state-invalid"]');
    expect(box?.textContent).toBe("attnscope: this widget's saved state is not valid: streams.self.num_heads 1000000000 is past the cap 1024.");
    expect(box?.getAttribute("role")).toBe("alert");
    expect(el.querySelector('[data-testid="attnscope-root"]')).toBeNull();
    expect(model.log.sent).toEqual([]);
  });
});
