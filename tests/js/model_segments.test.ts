// The model view's "collapse images" (js/views/model/model_segments.ts): the bytes a
// segment-mass cell is drawn from, and the box bound to `segment_rows` that swaps every
// cell's token × token thumbnail for its segment × segment mass, a layer's chunk at a time.
import { isolate } from "../../js/label_text";
import { renderModelView } from "../../js/views/model/model";
import { gridGeometry } from "../../js/views/model/model_grid";
import { NOT_SAVED, segmentBytes } from "../../js/views/model/model_segments";
import { ctxOf, installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

describe("segmentBytes", () => {
  it("log-encodes each head to its own largest mass; zero and NaN are blank", () => {
    // Two heads, 2 x 2 segments each: head 0 peaks at 0.5, head 1 at 0.02.
    const mass = Float32Array.of(0.5, 0.0005, 0, Number.NaN, 0.02, 0.01, 0.02, 0);
    const b = segmentBytes(mass, 2, 2);
    expect(Array.from(b.subarray(0, 4))).toEqual([255, 128, 0, 0]); // 10^-3 of the peak: 255 - 127
    expect(b[4]).toBe(255);
    expect(b[6]).toBe(255);
    expect(b[5]).toBe(Math.round(255 + (254 * Math.log10(0.5)) / 6));
    expect(b[7]).toBe(0);
  });

  it("keeps a mass far below the peak at byte 1, not 0", () => {
    expect(Array.from(segmentBytes(Float32Array.of(1), 1, 1))).toEqual([255]);
    expect(segmentBytes(Float32Array.of(1, 1e-9, 0, 0), 1, 2)[1]).toBe(1);
  });
});

const LABELS = ["a", "img0 (2×2 patches)"];

/** A 3-layer, 4-head fixture whose stream has an image as segment 1; layer 2's chunk is not in the page. */
function setup(segmentRows: boolean, layers = 3) {
  const f = makeFixture({ layers, heads: 4 });
  f.meta.segments = { stream: "self", by: "images", edges: [0, 1, f.N], labels: LABELS, titles: ["token 0", `tokens 1–${f.N - 1}`] };
  const base = f.message.bind(f);
  f.message = (keys) => {
    const m = base(keys.filter((k) => !k.startsWith("segments:")));
    for (const key of keys.filter((k) => k.startsWith("segments:"))) {
      const layer = Number(key.split(":")[2]);
      if (layer === 2 && layers === 3) { m.content.chunks.push({ key, error: "not included in this exported page (left out to bound its size)" }); continue; }
      // Head h: the image row looks at "a" with 0.1 * (h + 1), the rest at itself.
      const mass = new Float32Array(4 * 4);
      for (let h = 0; h < 4; h++) mass.set([1, 0, 0.1 * (h + 1), 1 - 0.1 * (h + 1)], h * 4);
      m.buffers.push(new Uint8Array(mass.buffer));
      m.content.chunks.push({ key, arrays: [{ name: "mass", dtype: "f32", shape: [4, 2, 2], buffer: m.buffers.length - 1 }] });
    }
    return m;
  };
  const ctx = viewContext(f, { view: "model", segment_rows: segmentRows });
  const cleanup = renderModelView(ctx);
  const view = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
  const canvas = view.querySelector<HTMLCanvasElement>('[data-testid="model-canvas"]')!;
  const box = view.querySelector<HTMLInputElement>('[data-testid="model-toggle-segments"]')!;
  return { f, ctx, cleanup, view, canvas, box };
}

const pixels = (canvas: HTMLCanvasElement): number[] =>
  Array.from((ctxOf(canvas).ops.filter((o) => o.name === "putImageData").at(-1)!.args[0] as ImageData).data);
const segmentRequests = (requested: string[][]): string[] => requested.flat().filter((k) => k.startsWith("segments:"));

describe("model view: collapse images", () => {
  it("ticking the box sets segment_rows, asks for each layer's chunk and redraws the cells", async () => {
    const { ctx, view, canvas, box, cleanup } = setup(false);
    await until(() => view.dataset.ready === "true");
    const label = box.closest("label")!;
    expect(label.hidden).toBe(false);
    expect(label.textContent).toBe(" collapse images");
    expect(box.checked).toBe(false);
    expect(view.dataset.rows).toBe("tokens");
    expect(segmentRequests(ctx.requested)).toEqual([]);
    const tokens = pixels(canvas);

    const draws = Number(view.dataset.draws);
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    expect(ctx.store.get().segment_rows).toBe(true);
    await until(() => Number(view.dataset.draws) > draws && view.dataset.ready === "true");
    expect(view.dataset.rows).toBe("segments");
    expect(segmentRequests(ctx.requested).sort()).toEqual(["segments:self:0", "segments:self:1", "segments:self:2"]);
    expect(pixels(canvas)).not.toEqual(tokens);
    // Layer 2's chunk is not in the page: its row says so instead of cells.
    expect(view.dataset.segmentsMissing).toBe("1");
    expect(ctxOf(canvas).ops.filter((o) => o.name === "fillText").map((o) => o.args[0])).toContain(NOT_SAVED);

    // Unticking goes back to the token thumbnails, without asking again.
    ctx.store.set({ segment_rows: false });
    await until(() => view.dataset.rows === "tokens");
    expect(box.checked).toBe(false);
    expect(pixels(canvas)).toEqual(tokens);
    cleanup();
  });

  it("follows segment_rows set elsewhere (the head view's box) and names the image under the pointer", async () => {
    const { ctx, view, canvas, box, cleanup } = setup(false);
    await until(() => view.dataset.ready === "true");
    ctx.store.set({ segment_rows: true });
    await until(() => view.dataset.rows === "segments" && view.dataset.ready === "true");
    expect(box.checked).toBe(true);
    // The lower left quarter of cell (layer 1, head 3): query img0, key "a".
    const g = gridGeometry(3, 4, 720);
    const x = 34 + 3 * (g.cell + 2) + g.cell * 0.25, y = 16 + 1 * (g.cell + 2) + g.cell * 0.75;
    canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: x, clientY: y, bubbles: true }));
    const preview = view.querySelector<HTMLElement>('[data-testid="model-preview"]')!;
    expect(preview.hidden).toBe(false);
    expect(preview.dataset.source).toBe("segments");
    const caption = preview.querySelector(".attnscope-mv-caption")!.textContent ?? "";
    expect(caption).toContain("images collapsed");
    expect(caption).toContain(`query ${isolate("img0 (2×2 patches)")} → key ${isolate("a")}: 0.400`);
    // The preview's axes are the segments: two labels each way.
    expect(preview.dataset.queryLabels).toBe("2");
    expect(preview.dataset.keyLabels).toBe("2");
    cleanup();
  });

  it("asks for a layer's chunk only once its row is in the window, one layer a request", async () => {
    const { ctx, view, canvas, cleanup } = setup(true, 40);
    await until(() => view.dataset.ready === "true");
    const asked = (): number[] => segmentRequests(ctx.requested).map((k) => Number(k.split(":")[2]));
    // 40 rows of 66 px; the window (happy-dom: 768 px high) holds about 12 of them.
    const first = asked();
    expect(Math.max(...first)).toBeLessThan(20);
    expect(first).toContain(0);
    expect(ctx.requested.filter((r) => r.some((k) => k.startsWith("segments:"))).every((r) => r.length === 1)).toBe(true);
    // Scrolled down by 2000 px: the rows now on screen are asked for, the first ones not again.
    canvas.getBoundingClientRect = () => ({ top: -2000, left: 0, right: 300, bottom: 700, width: 300, height: 2700, x: 0, y: -2000, toJSON: () => ({}) });
    window.dispatchEvent(new Event("scroll"));
    await until(() => asked().includes(35));
    expect(asked().filter((l) => l === 0)).toHaveLength(1);
    expect(asked()).not.toContain(25);
    cleanup();
  });

  it("is not offered without segments, and token mode asks for no segments chunk", async () => {
    const f = makeFixture({ layers: 3, heads: 4 });
    const ctx = viewContext(f, { view: "model" });
    const cleanup = renderModelView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
    await until(() => view.dataset.ready === "true");
    expect(view.querySelector('[data-testid="model-toggle-segments"]')!.closest("label")!.hidden).toBe(true);
    expect(view.dataset.rows).toBe("tokens");
    expect(segmentRequests(ctx.requested)).toEqual([]);
    cleanup();
  });
});
