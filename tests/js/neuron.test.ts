import { renderNeuronView } from "../../js/views/neuron/neuron";
import { softmaxRow } from "../../js/views/neuron/neuron_rows";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

async function setup(opts = {}, patch = {}) {
  const f = makeFixture(opts);
  const ctx = viewContext(f, { view: "neuron", ...patch });
  const cleanup = renderNeuronView(ctx);
  const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
  await until(() => view.dataset.ready === "true");
  return { f, ctx, cleanup, view };
}
const rowsOf = (v: HTMLElement) => [...v.querySelectorAll<HTMLElement>("[data-key]")].filter((r) => !r.hidden);

describe("softmaxRow", () => {
  it("skips masked keys and lets a sink take its share", () => {
    const s = Float64Array.of(0, 0, 5);
    expect(Array.from(softmaxRow(s, Uint8Array.of(0, 0, 1), null))).toEqual([0.5, 0.5, 0]);
    const w = softmaxRow(Float64Array.of(0, 0), Uint8Array.of(0, 0), 0);
    expect(w[0]).toBeCloseTo(1 / 3, 12);
  });
});

describe("neuron view", () => {
  it("shows q·k per key equal to Σ q[d]·k[d] and the exact softmax weight", async () => {
    const { f, view, ctx } = await setup({ bias: true }, { layer: 1, head: 2, query: 3 });
    expect(ctx.requested[0]).toEqual(["qk:self:1:2"]);
    const rows = rowsOf(view);
    expect(rows.length).toBe(f.N);
    for (const r of rows) {
      const j = Number(r.dataset.key);
      let dot = 0;
      for (let d = 0; d < f.D; d++) dot += f.q[1]![2]![3 * f.D + d]! * f.k[1]![2]![j * f.D + d]!;
      expect(Number(r.dataset.qk)).toBeCloseTo(dot, 6);
      expect(Number(r.dataset.weight)).toBeCloseTo(f.att[1]![2]![3 * f.N + j]!, 7);
    }
    expect(view.textContent).toContain("+ bias");
    // softmax(q·k × scale + bias) reproduces the recorded weights (the fixture computed them so),
    // which arrive in the attn: chunk at one byte each: equal within that rounding.
    const info = view.querySelector<HTMLElement>('[data-testid="neuron-info"]')!;
    await until(() => info.textContent!.includes("matches the model's own weights"));
    expect(Number(info.dataset.recomputeError)).toBeLessThan(1 / 510 + 1e-6);
    expect(view.querySelector('[data-testid="neuron-info"]')!.textContent).toContain("query “tok3” (#3)");
  });

  it("defaults to the first non-special query and shows the kv head under GQA", async () => {
    const { view, ctx } = await setup({ heads: 4, kvHeads: 2 }, { head: 1 });
    const info = view.querySelector('[data-testid="neuron-info"]')!.textContent!;
    expect(info).toContain("(#1)");
    expect(info).toContain("kv head 0");
    expect(ctx.store.get().query).toBe(1); // the store (and w.query) says the query shown
  });

  it("opens a causal stream on its last ordinary query, and says so to the store", async () => {
    const f = makeFixture(); // [CLS] tok1 .. tok4 [PAD]
    f.meta.streams.self!.causal = true;
    const ctx = viewContext(f, { view: "neuron" });
    renderNeuronView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
    await until(() => view.dataset.ready === "true");
    expect(view.querySelector('[data-testid="neuron-info"]')!.textContent).toContain("query “tok4” (#4)");
    expect(view.querySelector<HTMLInputElement>('[data-testid="neuron-query"]')!.value).toBe("4");
    expect(ctx.store.get().query).toBe(4);
  });

  it("says the query it shows again when a stream switch or the kernel clears it", async () => {
    const f = makeFixture({ target: 3 }); // self: [CLS] tok1 .. tok4 [PAD]; cross: out0 .. out2
    f.meta.streams.self!.causal = true;
    const ctx = viewContext(f, { view: "neuron" });
    renderNeuronView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
    await until(() => view.dataset.ready === "true");
    expect(ctx.store.get().query).toBe(4);
    ctx.store.set({ stream: "cross", query: null }); // app.ts's clamp clears a query whose side changes
    expect(ctx.store.get().query).toBe(0); // cross-attention: the first target token
    await until(() => view.querySelector('[data-testid="neuron-info"]')!.textContent!.includes("query “out0” (#0)"));
    ctx.store.set({ stream: "self" });
    ctx.store.set({ query: null });
    expect(ctx.store.get().query).toBe(4);
  });

  it("keeps a chosen query in a causal stream", async () => {
    const f = makeFixture();
    f.meta.streams.self!.causal = true;
    const ctx = viewContext(f, { view: "neuron", query: 2 });
    renderNeuronView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
    await until(() => view.dataset.ready === "true");
    expect(view.querySelector('[data-testid="neuron-info"]')!.textContent).toContain("(#2)");
    expect(ctx.store.get().query).toBe(2);
  });

  it("shows bias per key and takes the query from its input", async () => {
    const { view, ctx } = await setup({ bias: true });
    const row = rowsOf(view)[0]!;
    expect(row.querySelectorAll(".attnscope-nv-num")[1]!.hasAttribute("hidden")).toBe(false);
    const input = view.querySelector<HTMLInputElement>('[data-testid="neuron-query"]')!;
    expect(input.value).toBe("1");
    input.value = "4";
    input.dispatchEvent(new Event("change"));
    expect(ctx.store.get().query).toBe(4);
  });

  it("sorts by weight on request", async () => {
    const { view } = await setup();
    const sel = view.querySelector<HTMLSelectElement>('[data-testid="neuron-sort"]')!;
    sel.value = "weight";
    const n = Number(view.dataset.draws);
    sel.dispatchEvent(new Event("change"));
    await until(() => Number(view.dataset.draws) > n);
    const ws = rowsOf(view).sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top)).map((r) => Number(r.dataset.weight));
    expect(ws).toEqual([...ws].sort((a, b) => b - a));
  });

  it("clicking a key row sets key; selection change reloads", async () => {
    const { view, ctx } = await setup();
    rowsOf(view)[4]!.click();
    expect(ctx.store.get().key).toBe(4);
    ctx.store.set({ head: 1 });
    await until(() => ctx.requested.flat().includes("qk:self:0:1"));
  });

  it("hovering a dimension highlights it across rows", async () => {
    const { view } = await setup();
    const strip = rowsOf(view)[0]!.querySelector("canvas")!;
    strip.dispatchEvent(new MouseEvent("mousemove", { clientX: 9, bubbles: true }));
    await until(() => view.dataset.hoverDim !== undefined);
    expect(Number(view.dataset.hoverDim)).toBeGreaterThanOrEqual(0);
  });

  it("shows the reason when the neuron view is unavailable", async () => {
    const f = makeFixture({ dim: null });
    const ctx = viewContext(f, { view: "neuron" });
    renderNeuronView(ctx);
    await until(() => /head_dim is null/.test(ctx.root.textContent ?? ""));
    const f2 = makeFixture();
    f2.meta.neuron_unavailable = "DeBERTa scores are not q·k";
    const ctx2 = viewContext(f2, { view: "neuron" });
    renderNeuronView(ctx2);
    await until(() => /DeBERTa/.test(ctx2.root.textContent ?? ""));
    expect(ctx2.requested.length).toBe(0);
  });

  it("an error chunk shows the message and hides stale rows", async () => {
    const { view, ctx } = await setup();
    ctx.store.set({ head: 9 });
    await until(() => /Could not load q and k of layer \d+ · head 9/.test(view.textContent ?? ""));
    expect((view.querySelector('[data-testid="neuron-viewport"]') as HTMLElement).hidden).toBe(true);
    expect(view.dataset.ready).toBe("false");
  });

  it("saves the visible rows as SVG (with q·k values) and PNG", async () => {
    const { view } = await setup();
    const blobs: Blob[] = [];
    const orig = URL.createObjectURL;
    URL.createObjectURL = ((b: Blob) => { blobs.push(b); return "blob:x"; }) as typeof URL.createObjectURL;
    view.querySelector<HTMLButtonElement>('[data-testid="save-svg"]')!.click();
    view.querySelector<HTMLButtonElement>('[data-testid="save-png"]')!.click();
    await until(() => blobs.length === 2);
    URL.createObjectURL = orig;
    const svg = await blobs[0]!.text();
    const first = rowsOf(view)[0]!;
    expect(svg).toContain(first.querySelector(".attnscope-nv-num")!.textContent!);
    expect(svg.match(/<rect /g)!.length).toBeGreaterThan(6 * 4 * 2);
    expect(blobs[1]!.type).toBe("image/png");
  });

  it("cleanup stops redraws", async () => {
    const { view, ctx, cleanup } = await setup();
    cleanup();
    const n = Number(view.dataset.draws);
    ctx.store.set({ head: 2, query: 2 });
    await new Promise((r) => setTimeout(r, 5));
    expect(Number(view.dataset.draws)).toBe(n);
  });
});
