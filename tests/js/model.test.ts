import { renderModelView } from "../../js/views/model/model";
import { gridGeometry } from "../../js/views/model/model_grid";
import { ctxOf, installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

async function setup() {
  const f = makeFixture({ layers: 3, heads: 4 });
  const ctx = viewContext(f, { view: "model" });
  const cleanup = renderModelView(ctx);
  const view = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
  await until(() => view.dataset.ready === "true");
  const canvas = view.querySelector<HTMLCanvasElement>('[data-testid="model-canvas"]')!;
  return { f, ctx, cleanup, view, canvas };
}

/** Mouse position at the centre of cell (l, h) (happy-dom's rects are at 0,0). */
function at(l: number, h: number) {
  const g = gridGeometry(3, 4, 720);
  return { clientX: 34 + h * (g.cell + 2) + g.cell / 2, clientY: 16 + l * (g.cell + 2) + g.cell / 2, bubbles: true };
}

describe("model view", () => {
  it("keeps the overview behind a button when a thumbnail already shows every weight", async () => {
    const { view } = await setup(); // 6 tokens: each cell is the whole 6 × 6
    expect(view.querySelector('[data-testid="overview"]')).toBeNull();
    const open = view.querySelector<HTMLButtonElement>('[data-testid="overview-open"]')!;
    open.click();
    expect(view.querySelector('[data-testid="overview"]')).not.toBeNull();
    expect(view.querySelector('[data-testid="overview-open"]')).toBeNull();
  });

  it("keeps its chosen scale when it is left and shown again (Head → Model)", async () => {
    const { ctx, cleanup, view } = await setup();
    const select = view.querySelector<HTMLSelectElement>('[data-testid="model-scale-select"]')!;
    select.value = "log";
    select.dispatchEvent(new Event("change"));
    expect(view.dataset.scale).toBe("log");
    cleanup();
    ctx.root.replaceChildren();
    renderModelView(ctx);
    const again = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
    await until(() => again.dataset.ready === "true");
    expect(again.dataset.scale).toBe("log");
    expect(again.querySelector<HTMLSelectElement>('[data-testid="model-scale-select"]')!.value).toBe("log");
  });

  it("draws every cell in one putImageData from thumbs", async () => {
    const { ctx, canvas } = await setup();
    expect(ctx.requested[0]).toEqual(["thumbs:self"]);
    const rec = ctxOf(canvas);
    expect(rec.count("putImageData")).toBe(1);
    const fills = rec.ops.filter((o) => o.name === "fillText").map((o) => o.args[0]);
    expect(fills).toContain("L0");
    expect(fills).toContain("L2");
    const img = rec.ops.find((o) => o.name === "putImageData")!.args[0] as ImageData;
    expect(img.data.some((v, i) => i % 4 !== 3 && v !== 255)).toBe(true);
  });

  it("click on a cell opens it in the head view", async () => {
    const { ctx, canvas } = await setup();
    canvas.dispatchEvent(new MouseEvent("click", at(2, 3)));
    const s = ctx.store.get();
    expect([s.layer, s.heads, s.head, s.view]).toEqual([2, [3], 3, "head"]);
  });

  it("shift-click opens the neuron view", async () => {
    const { ctx, canvas } = await setup();
    canvas.dispatchEvent(new MouseEvent("click", { ...at(1, 1), shiftKey: true }));
    expect(ctx.store.get().view).toBe("neuron");
  });

  it("re-reads colours when the theme changes", async () => {
    const { ctx, view, canvas } = await setup();
    const rec = ctxOf(canvas);
    rec.reset();
    const n = Number(view.dataset.draws);
    ctx.store.set({ resolved_theme: "dark", theme_rev: 1 });
    await until(() => Number(view.dataset.draws) > n);
    expect(rec.count("putImageData")).toBe(1);
  });

  it("hover shows a larger preview, from the full-resolution chunk once it has arrived", async () => {
    const { ctx, view, canvas } = await setup();
    canvas.dispatchEvent(new MouseEvent("mousemove", at(1, 2)));
    const prev = view.querySelector<HTMLElement>('[data-testid="model-preview"]')!;
    expect(prev.hidden).toBe(false);
    expect(prev.dataset.source).toBe("thumb");
    expect(prev.textContent).toContain("Layer 1 · head 2");
    await until(() => prev.dataset.source === "attn");
    expect(ctx.requested.flat()).toContain("attn:self:1:2");
    canvas.dispatchEvent(new MouseEvent("mouseleave"));
    expect(prev.hidden).toBe(true);
  });

  it("redraws on selection change and stops after cleanup", async () => {
    const { ctx, view, cleanup } = await setup();
    const n = Number(view.dataset.draws);
    ctx.store.set({ layer: 1 });
    await until(() => Number(view.dataset.draws) > n);
    cleanup();
    const m = Number(view.dataset.draws);
    ctx.store.set({ layer: 2 });
    await new Promise((r) => setTimeout(r, 5));
    expect(Number(view.dataset.draws)).toBe(m);
  });

  it("exports an SVG with one image per cell", async () => {
    const { view } = await setup();
    const blobs: Blob[] = [];
    const orig = URL.createObjectURL;
    URL.createObjectURL = ((b: Blob) => { blobs.push(b); return "blob:x"; }) as typeof URL.createObjectURL;
    view.querySelector<HTMLButtonElement>('[data-testid="save-svg"]')!.click();
    URL.createObjectURL = orig;
    const svg = await blobs[0]!.text();
    expect(svg.match(/<image /g)?.length).toBe(12);
  });
});

describe("model view hint", () => {
  it("promises only the views the widget offers", () => {
    const f = makeFixture({ layers: 2, heads: 2 });
    const all = viewContext(f, { view: "model" });
    renderModelView(all);
    expect(all.root.textContent).toContain("open it in the head view");
    const alone = viewContext(f, { view: "model" });
    renderModelView({ ...alone, meta: { ...f.meta, views: ["model"] } });
    const hint = alone.root.querySelector(".attnscope-hint")!.textContent!;
    expect(hint).toContain("Hover a cell to enlarge it");
    expect(hint).not.toContain("head view");
    expect(hint).not.toContain("neuron");
  });
});
