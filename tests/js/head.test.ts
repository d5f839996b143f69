import { renderHeadView } from "../../js/views/head";
import { ctxOf, installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

const q = <T extends Element>(root: ParentNode, sel: string): T => {
  const e = root.querySelector(sel);
  if (!e) throw new Error(`no ${sel}`);
  return e as T;
};
const draws = (v: HTMLElement): number => Number(v.dataset.draws);

async function setup(opts = {}, patch = {}) {
  const f = makeFixture(opts);
  const ctx = viewContext(f, patch);
  const cleanup = renderHeadView(ctx);
  const view = q<HTMLElement>(ctx.root, '[data-testid="head-view"]');
  await until(() => view.dataset.ready === "true");
  return { f, ctx, cleanup, view, canvas: q<HTMLCanvasElement>(view, "canvas") };
}

describe("head view", () => {
  it("requests the current layer first, then neighbours, and draws lines on a canvas", async () => {
    const { ctx, view, canvas } = await setup();
    expect(ctx.requested[0]).toEqual(["top:self:0"]);
    await until(() => ctx.requested.length >= 2);
    expect(ctx.requested[1]).toEqual(["top:self:1"]);
    const rec = ctxOf(canvas);
    expect(rec.count("lineTo")).toBe(Number(view.dataset.lines));
    expect(Number(view.dataset.lines)).toBeGreaterThan(0);
  });

  it("renders token rows with textContent and marks special, padding and boundary tokens", async () => {
    const { view, f } = await setup({ segments: true });
    const rows = view.querySelectorAll('[data-side="query"] [data-i]');
    expect(rows.length).toBe(f.N);
    expect(rows[0]!.classList.contains("is-special")).toBe(true);
    expect(rows[f.N - 1]!.classList.contains("is-padding")).toBe(true);
    expect(rows[f.N / 2]!.classList.contains("is-boundary")).toBe(true);
    expect(rows[1]!.textContent).toBe("tok1");
    expect(view.querySelector('[data-testid="pair-filter"]')).not.toBeNull();
  });

  it("one swatch per head; click toggles, double-click isolates", async () => {
    const { ctx, view } = await setup({ heads: 4 });
    const sw = view.querySelectorAll<HTMLButtonElement>("[data-head]");
    expect(sw.length).toBe(4);
    expect(sw[1]!.getAttribute("aria-label")).toBe("Head 1");
    expect(sw[1]!.getAttribute("aria-pressed")).toBe("true");
    sw[1]!.click();
    expect(ctx.store.get().heads).toEqual([0, 2, 3]);
    await until(() => sw[1]!.getAttribute("aria-pressed") === "false");
    sw[2]!.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    expect(ctx.store.get().heads).toEqual([2]);
    expect(ctx.store.get().head).toBe(2);
    const colors = new Set([...sw].map((b) => b.style.getPropertyValue("--swatch")));
    expect(colors.size).toBe(4);
  });

  it("hovering a query shows only its lines; click locks the query", async () => {
    const { ctx, view, f } = await setup();
    const all = Number(view.dataset.lines);
    const row = q<HTMLElement>(view, '[data-side="query"] [data-i="2"]');
    const n0 = draws(view);
    row.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
    await until(() => draws(view) > n0);
    const one = Number(view.dataset.lines);
    expect(one).toBeLessThanOrEqual(f.H * f.N);
    expect(one).toBeLessThan(all);
    const keyBars = [...view.querySelectorAll<HTMLElement>('[data-side="key"] [data-i]')].filter((d) => d.style.boxShadow);
    expect(keyBars.length).toBeGreaterThan(0); // the hovered query's keys show their weight
    row.click();
    expect(ctx.store.get().query).toBe(2);
    await until(() => row.classList.contains("is-selected"));
  });

  it("top-k chunks: a focused query draws at most heads × top_k lines, strongest first", async () => {
    const { view, f } = await setup({ tokens: 12, topK: 2 });
    const row = view.querySelector<HTMLElement>('[data-side="query"] [data-i="5"]')!;
    const n0 = Number(view.dataset.draws);
    row.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
    await until(() => Number(view.dataset.draws) > n0);
    expect(Number(view.dataset.lines)).toBeLessThanOrEqual(f.H * 2);
    expect(Number(view.dataset.lines)).toBeGreaterThanOrEqual(f.H);
  });

  it("pair filter keeps only lines from A to B", async () => {
    const { ctx, view } = await setup({ segments: true });
    const all = Number(view.dataset.lines);
    const n0 = draws(view);
    ctx.store.set({ pair_filter: "AB" });
    await until(() => draws(view) > n0);
    expect(Number(view.dataset.lines)).toBeLessThan(all);
    expect(q<HTMLSelectElement>(view, '[data-testid="pair-filter"]').value).toBe("AB");
  });

  it("redraws on layer change with the new chunk", async () => {
    const { ctx, view } = await setup();
    ctx.store.set({ layer: 1 });
    await until(() => view.dataset.ready === "true" && ctx.requested.flat().includes("top:self:1"));
    expect(view.dataset.ready).toBe("true");
  });

  it("shows an error instead of a blank when a chunk fails", async () => {
    const f = makeFixture();
    const ctx = viewContext(f, { layer: 7 });
    renderHeadView(ctx);
    await until(() => /Could not load/.test(ctx.root.textContent ?? ""));
    expect(ctx.root.querySelector('[role="alert"]')).not.toBeNull();
  });

  it("caps lines at large N and virtualises rows", async () => {
    const { view, f } = await setup({ tokens: 300, heads: 8, layers: 1, dim: 2 });
    const rows = view.querySelectorAll('[data-side="query"] [data-i]');
    expect(rows.length).toBeLessThan(60);
    expect(Number(view.dataset.lines)).toBeLessThanOrEqual(3000);
    expect(f.N).toBe(300);
  });

  it("lines to off-screen keys are counted at the edge; a moved query scrolls into view", async () => {
    const { ctx, view } = await setup({ tokens: 200, heads: 2, layers: 1, dim: 2 });
    const n0 = Number(view.dataset.draws);
    ctx.store.set({ query: 150 });
    await until(() => Number(view.dataset.draws) > n0);
    const vp = view.querySelector<HTMLElement>('[data-testid="head-viewport"]')!;
    expect(vp.scrollTop).toBeGreaterThan(0);
    const [above] = view.dataset.offscreen!.split(",").map(Number);
    expect(above).toBeGreaterThan(0); // query 150 attends to earlier keys above the view
  });

  it("token text is never parsed as HTML", async () => {
    const f = makeFixture();
    f.meta.sides.source!.labels[1] = '<img src=x onerror="window.__pwned=1">';
    const ctx = viewContext(f);
    renderHeadView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')!;
    await until(() => view.dataset.ready === "true");
    expect(ctx.root.querySelector("img")).toBeNull();
    expect(view.textContent).toContain("<img src=x");
  });

  it("cleanup removes listeners: no draws after it", async () => {
    const { ctx, view, cleanup } = await setup();
    const n = draws(view);
    cleanup();
    ctx.store.set({ layer: 1, heads: [0] });
    await new Promise((r) => setTimeout(r, 5));
    expect(draws(view)).toBe(n);
    expect(ctx.root.querySelector('[data-testid="head-view"]')).toBeNull();
  });

  it("exports SVG with escaped token text and PNG from a composed canvas", async () => {
    const { view } = await setup();
    const created: Blob[] = [];
    const orig = URL.createObjectURL;
    URL.createObjectURL = ((b: Blob) => { created.push(b); return "blob:x"; }) as typeof URL.createObjectURL;
    q<HTMLButtonElement>(view, '[data-testid="save-svg"]').click();
    q<HTMLButtonElement>(view, '[data-testid="save-png"]').click();
    await until(() => created.length === 2);
    URL.createObjectURL = orig;
    const svg = await created[0]!.text();
    expect(svg).toContain("<svg");
    expect(svg).toContain("<line");
    // The export paints the lines the screen shows, through the same calls.
    expect(svg.match(/<line /g)!.length).toBe(Number(view.dataset.lines));
    expect(svg).toContain("[CLS]");
    expect(created[1]!.type).toBe("image/png");
  });
});
