// The app shell (js/app.ts): tabs per `_meta.views`, no tab bar for one view, views not offered redirected.
import { renderApp } from "../../js/app";
import { offeredViews } from "../../js/offered_views";
import type { Meta, ViewName } from "../../js/wire/types";
import widget from "../../js/widget";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, mockModel, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

function app(views: ViewName[] | undefined, view: ViewName = "head") {
  const f = makeFixture();
  const meta: Meta = { ...f.meta, views };
  const ctx = viewContext(f, { view });
  const cleanup = renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
  const tabs = () => [...ctx.root.querySelectorAll<HTMLElement>('[role="tab"]')].map((b) => b.dataset.view);
  return { ...ctx, cleanup, tabs };
}
const shown = (root: HTMLElement, name: ViewName): boolean => root.querySelector(`[data-testid="${name}-view"]`) !== null;

describe("app views", () => {
  it("builds one tab per offered view, in _meta.views order", () => {
    const { root, tabs } = app(["neuron", "head"], "head");
    expect(tabs()).toEqual(["neuron", "head"]);
    expect(root.querySelector('[role="tablist"]')).not.toBeNull();
    expect(root.querySelector('[data-testid="tab-head"]')!.getAttribute("aria-selected")).toBe("true");
  });

  it("offers all three views when _meta has no views (pages written before it)", () => {
    expect(app(undefined).tabs()).toEqual(["head", "model", "neuron"]);
    expect(offeredViews({ ...makeFixture().meta, views: [] })).toEqual(["head", "model", "neuron"]);
    // Unknown names and repeats (a hand-edited page) are dropped.
    expect(offeredViews({ ...makeFixture().meta, views: ["model", "graph", "constructor", "model"] as ViewName[] })).toEqual(["model"]);
  });

  it("has no tab bar when only one view is offered", () => {
    const { root, tabs } = app(["model"], "model");
    expect(root.querySelector('[role="tablist"]')).toBeNull();
    expect(tabs()).toEqual([]);
    expect(shown(root, "model")).toBe(true);
    expect(root.querySelector('[data-testid="layer-select"]')).not.toBeNull(); // the controls stay
  });

  it("redirects a view that is not offered to the first offered one", () => {
    const { root, store } = app(["model", "neuron"], "head");
    expect(store.get().view).toBe("model");
    expect(shown(root, "model")).toBe(true);
    expect(shown(root, "head")).toBe(false);
    store.set({ view: "head" }); // e.g. a model-view cell click, which opens the head view
    expect(store.get().view).toBe("model");
    expect(shown(root, "model")).toBe(true);
    store.set({ view: "neuron" });
    expect(shown(root, "neuron")).toBe(true);
  });

  it("writes the redirected view back to the widget's trait", async () => {
    const f = makeFixture();
    const model = mockModel({ ...f, meta: { ...f.meta, views: ["model"] } }, { view: "head" });
    const el = document.createElement("div");
    document.body.append(el);
    widget.render({ model, el });
    expect(model.get("view")).toBe("model");
    expect(model.log.saves).toBeGreaterThan(0);
    await until(() => el.querySelector<HTMLElement>('[data-testid="model-view"]')?.dataset.ready === "true");
    // A cell click opens the head view where there is one; here the kernel never hears of it.
    const canvas = el.querySelector<HTMLCanvasElement>('[data-testid="model-canvas"]')!;
    canvas.dispatchEvent(new MouseEvent("click", { clientX: 40, clientY: 20, bubbles: true }));
    expect(model.get("view")).toBe("model");
    expect(model.log.sets.filter(([k, v]) => k === "view" && v !== "model")).toEqual([]);
  });
});

describe("app stream change", () => {
  it("follows encode/stream_change.py: a query goes when rows switch side, a key of the same side stays", () => {
    const f = makeFixture({ target: 3, segments: true });
    const ctx = viewContext(f, { view: "head", stream: "self", layer: 1, head: 2, heads: [2], query: 1, key: 4, queries: [1, 2], pair_filter: "AB" });
    const cleanup = renderApp({ meta: f.meta, store: ctx.store, data: ctx.data, el: ctx.root });
    expect(ctx.store.get()).toMatchObject({ layer: 1, head: 2, heads: [2], query: 1, key: 4, pair_filter: "AB" }); // the first render moves nothing
    ctx.store.set({ stream: "cross" });
    // Row 1 of cross is the target's token 1, not the source's: the query and summed queries go.
    expect(ctx.store.get()).toMatchObject({ stream: "cross", layer: 1, head: 2, heads: [2], query: null, key: 4, queries: [], pair_filter: "AB" });
    ctx.store.set({ query: 2 });
    ctx.store.set({ stream: "self" });
    expect(ctx.store.get()).toMatchObject({ stream: "self", query: null, key: 4 });
    cleanup();
  });
});
