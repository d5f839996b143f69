import type { Chunk } from "../../js/wire/types";
import { renderHeadView } from "../../js/views/head/head";
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

describe("head view over rows loaded a block at a time", () => {
  const N = 200, BLOCK = 16;
  const opts = { tokens: N, heads: 3, layers: 2, dim: 2, topK: 6, seed: 11 };
  /** Words of three tokens each, so words straddle blocks of 16 rows. */
  const withWords = (f: ReturnType<typeof makeFixture>) => {
    f.meta.sides.source!.words = Array.from({ length: N }, (_, i) => Math.floor(i / 3));
    f.meta.sides.source!.continues = Array.from({ length: N }, (_, i) => i % 3 !== 0);
    return f;
  };
  /** What a reader sees: lines, edge counts, key bars, legend, status, the canvas calls. */
  const seen = (view: HTMLElement) => ({
    lines: view.dataset.lines,
    offscreen: view.dataset.offscreen,
    legend: q<HTMLElement>(view, '[data-testid="head-scale"]').textContent,
    status: q<HTMLElement>(view, ".attnscope-status").textContent,
    bars: [...view.querySelectorAll<HTMLElement>('[data-side="key"] [data-i]')].map((d) => `${d.dataset.i}:${d.style.boxShadow}`).join(" "),
    ops: JSON.stringify(ctxOf(q<HTMLCanvasElement>(view, "canvas")).ops.slice(-400)),
  });
  /**
   * The same view over whole-layer chunks and over blocks, as seen once drawn
   * (after `act`, if given). The blocks' view gets only the first request after
   * it starts (and after `act`) answered before it is seen, so it is seen with
   * the blocks a draw needs and none fetched ahead; `release` answers the rest.
   */
  async function both(patch = {}, words = false, act?: (view: HTMLElement) => void) {
    const out = [];
    for (const topBlock of [undefined, BLOCK]) {
      const f = makeFixture({ ...opts, topBlock });
      const ctx = viewContext(words ? withWords(f) : f, patch);
      let allow = 1;
      const held: (() => void)[] = [];
      const data = { peek: ctx.data.peek, request: (keys: string[]) => (allow-- > 0 ? ctx.data.request(keys) : new Promise<Map<string, Chunk>>((r) => { held.push(() => r(ctx.data.request(keys))); })) };
      renderHeadView({ ...ctx, data });
      const view = q<HTMLElement>(ctx.root, '[data-testid="head-view"]');
      await until(() => view.dataset.ready === "true");
      if (act) {
        allow = 1;
        act(view);
        await until(() => view.dataset.ready === "true");
      }
      const canvas = ctxOf(q<HTMLCanvasElement>(view, "canvas"));
      canvas.reset();
      ctx.store.set({ theme_rev: 1 }); // one more draw, recorded
      await until(() => canvas.ops.length > 0);
      const release = async () => { allow = Infinity; for (const fn of held.splice(0)) fn(); await new Promise((r) => setTimeout(r, 5)); };
      out.push({ view, ctx, seen: seen(view), release });
    }
    return out as [typeof out[0], typeof out[0]];
  }

  it("asks for the rows on screen only, and draws what the whole-layer chunk draws", async () => {
    const [whole, blocks] = await both();
    expect(whole.ctx.requested[0]).toEqual(["top:self:0"]);
    // 560 px of 18 px rows plus overscan: rows 0..35, blocks 0, 16 and 32.
    expect(blocks.ctx.requested[0]).toEqual(["top:self:0:0", "top:self:0:16", "top:self:0:32"]);
    expect(blocks.seen).toEqual(whole.seen);
    expect(Number(blocks.seen.lines)).toBeGreaterThan(0);
    await blocks.release();
    expect(blocks.ctx.requested.flat()).not.toContain("top:self:0");
    expect(blocks.ctx.requested[1]).toEqual(["top:self:0:48"]); // ahead of scrolling
    expect(blocks.ctx.requested[2]).toEqual(["top:self:1:0", "top:self:1:16", "top:self:1:32"]); // the next layer's rows
    expect(seen(blocks.view)).toEqual(blocks.seen); // what arrives ahead changes nothing shown
  });

  it("a query far down, several summed queries, words and hidden tokens: the same numbers", async () => {
    for (const [patch, words] of [
      [{ query: 150 }, false],
      [{ queries: [3, 170, 171] }, false],
      [{ query: 159, words: true }, true], // word 53: tokens 159-161, across two blocks
      [{ queries: [40, 112], words: true, hide_special: true, log_scale: true }, true],
    ] as const) {
      const [whole, blocks] = await both(patch, words);
      expect(blocks.seen).toEqual(whole.seen);
      expect(blocks.seen.lines).not.toBe("0");
    }
  });

  it("scrolling to rows not loaded asks for their blocks and draws them as the whole chunk does", async () => {
    const scroll = (view: HTMLElement): void => {
      const vp = q<HTMLElement>(view, '[data-testid="head-viewport"]');
      vp.scrollTop = 120 * 18;
      vp.dispatchEvent(new Event("scroll"));
    };
    const [whole, blocks] = await both({}, false, scroll);
    expect(blocks.ctx.requested[1]).toEqual(["top:self:0:112", "top:self:0:128", "top:self:0:144"]);
    expect(blocks.seen).toEqual(whole.seen);
  });

  it("while a layer's rows load it shows no lines and no numbers and says so, then the layer", async () => {
    const f = makeFixture({ ...opts, topBlock: BLOCK });
    const base = viewContext(f, { query: 5, queries: [3, 5] });
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => { release = r; });
    const held = { ...base, data: { peek: base.data.peek, request: (keys: string[]) => (keys.some((k) => k.startsWith("top:self:1")) ? gate.then(() => base.data.request(keys)) : base.data.request(keys)) } };
    renderHeadView(held);
    const view = q<HTMLElement>(held.root, '[data-testid="head-view"]');
    await until(() => view.dataset.ready === "true");
    held.store.set({ layer: 1 });
    await until(() => view.dataset.ready === "false");
    expect(view.dataset.lines).toBe("0");
    expect(q<HTMLElement>(view, '[data-testid="head-scale"]').textContent).not.toMatch(/row max =/);
    expect(q<HTMLElement>(view, ".attnscope-status").textContent).toBe("Loading layer 1…");
    expect([...view.querySelectorAll<HTMLElement>('[data-side="key"] [data-i]')].every((d) => !d.style.boxShadow)).toBe(true);
    release();
    await until(() => view.dataset.ready === "true");
    expect(Number(view.dataset.lines)).toBeGreaterThan(0);
    expect(q<HTMLElement>(view, ".attnscope-status").textContent).toMatch(/^Summed attention of 2 queries/);
  });

  it("a block that fails says which and why", async () => {
    const f = makeFixture({ ...opts, topBlock: BLOCK });
    const ctx = viewContext(f, { layer: 7 });
    renderHeadView(ctx);
    await until(() => /Could not load the head view's lines of layer 7 \(rows 0…\): no layer 7/.test(ctx.root.textContent ?? ""));
    expect(ctx.root.querySelector('[role="alert"]')).not.toBeNull();
  });
});
