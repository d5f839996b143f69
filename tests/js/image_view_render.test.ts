// The image view (js/views/image/image.ts) over hand-made chunks: the token strip, a click that
// sets the query, the putImageData of the heatmap, and a hovered patch's strongest queries.
import { imageKey, pixelsKey } from "../../js/wire/keys";
import { createStore } from "../../js/state";
import { DEFAULT_SELECTION } from "../../js/selection";
import type { AppState, Chunk, DataSource, ImagesMeta, Meta, NDArray } from "../../js/wire/types";
import { renderImageView } from "../../js/views/image/image";
import { layoutPanels } from "../../js/views/image/image_geometry";
import { ctxOf, installCanvas } from "./helpers/canvas";
import { makeFixture, until } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

// Tokens 0..5 of the fixture; 1 and 2 show a 1 x 2 image; the queries are 0, 3, 4, 5.
const IMAGES: ImagesMeta = { stream: "self", queries: [0, 3, 4, 5], images: [{ height: 2, width: 4, grids: [{ name: "image", rows: 1, cols: 2, tiles: null, positions: [1, 2] }] }] };
const arr = (dtype: NDArray["dtype"], shape: number[], data: NDArray["data"]): NDArray => ({ dtype, shape, data });

function chunks(heads: number): Map<string, Chunk> {
  // Query 3 looks at the right patch only, query 4 at the left one, the others at both.
  const rows = [[255, 255], [0, 255], [255, 0], [255, 255]];
  const weight = Uint8Array.from(Array.from({ length: heads }, () => rows.flat()).flat());
  const rowmax = Float32Array.from({ length: heads * 4 }, (_, i) => [0.1, 0.5, 0.4, 0.2][i % 4] as number);
  const image: Chunk = { key: imageKey("self", 0), arrays: { weight: arr("u8", [heads, 4, 2], weight), rowmax: arr("f32", [heads, 4], rowmax) } };
  const pixels: Chunk = { key: pixelsKey("self"), arrays: { image0: arr("u8", [2, 4, 3], new Uint8Array(24).fill(200)) } };
  return new Map([[image.key, image], [pixels.key, pixels]]);
}

function mount(images: ImagesMeta = IMAGES) {
  const f = makeFixture({ tokens: 6, heads: 2 });
  const meta: Meta = { ...f.meta, images };
  const store = createStore<AppState>({ ...DEFAULT_SELECTION, stream: "self", heads: [0, 1], theme: "light", resolved_theme: "light", theme_rev: 0 });
  const all = chunks(2);
  const data: DataSource = {
    request: (keys) => Promise.resolve(new Map(keys.map((k) => [k, all.get(k) ?? { key: k, arrays: {}, error: "missing" }]))),
    peek: () => undefined,
  };
  const root = document.createElement("div");
  document.body.append(root);
  const cleanup = renderImageView({ meta, store, data, root });
  const view = root.querySelector<HTMLElement>('[data-testid="image-view"]')!;
  return { f, store, root, view, cleanup };
}

describe("image view", () => {
  it("lists the text queries, starts on the last, and takes a clicked one as the query", async () => {
    const { store, root, view } = mount();
    await until(() => view.dataset.ready === "true");
    const strip = [...root.querySelectorAll<HTMLElement>('[data-testid="image-tokens"] [data-query]')];
    expect(strip.map((b) => b.dataset.query)).toEqual(["0", "3", "4", "5"]);
    expect(view.dataset.query).toBe("5");
    expect(store.get().query).toBe(5); // the store (and w.query) says the query shown
    strip[1]!.click();
    expect(store.get().query).toBe(3);
    await until(() => view.dataset.query === "3");
    expect(root.querySelector('[data-testid="image-info"]')!.textContent).toContain("50.0% of its attention on the image");
    // The share bars: query 3 gives 0.5 to the image, query 0 gives 0.2.
    expect(strip.map((b) => Number(b.dataset.share).toFixed(2))).toEqual(["0.20", "0.50", "0.40", "0.40"]);
  });

  it("draws the heatmap as pixels and names the strongest queries of a hovered patch", async () => {
    const { root, view } = mount();
    await until(() => view.dataset.ready === "true");
    const canvas = root.querySelector<HTMLCanvasElement>('[data-testid="image-canvas"]')!;
    expect(ctxOf(canvas).count("putImageData")).toBeGreaterThan(0);
    const [panel] = layoutPanels(IMAGES).panels;
    const draws = Number(view.dataset.draws);
    canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: panel!.x + panel!.w * 0.75, clientY: panel!.y + 2 }));
    await until(() => Number(view.dataset.draws) > draws);
    const hover = root.querySelector<HTMLElement>('[data-testid="image-hover"]')!;
    expect(hover.textContent).toContain("img0 r0c1: most attended by");
    // The right patch: query 3 (0.5); [PAD] (0.2) and [CLS] (0.1) give it weight too, but
    // words come before special tokens, and query 4 gives it nothing.
    expect(hover.dataset.tokens).toBe("3");
    expect(hover.textContent).toContain("tok3");
  });

  it("says how many earlier text tokens a long prompt leaves out", async () => {
    const { root, view } = mount({ ...IMAGES, left_out: 120 });
    await until(() => view.dataset.ready === "true");
    expect(root.querySelector('[data-testid="image-left-out"]')!.textContent).toContain("120 earlier text tokens");
    expect(mount().root.querySelector('[data-testid="image-left-out"]')).toBeNull();
  });

  it("cleans up after itself", async () => {
    const { root, view, cleanup } = mount();
    await until(() => view.dataset.ready === "true");
    cleanup();
    expect(root.querySelector('[data-testid="image-view"]')).toBeNull();
  });
});
