import widget from "../../js/widget";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, mockModel, until } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

function mountWith(traits = {}, opts = {}, fx = {}) {
  const f = makeFixture({ layers: 2, heads: 3, ...fx });
  const model = mockModel(f, traits, opts);
  const el = document.createElement("div");
  document.body.append(el);
  const cleanup = widget.render({ model, el });
  return { f, model, el, cleanup };
}
const ready = (el: HTMLElement, id: string) => el.querySelector<HTMLElement>(`[data-testid="${id}"]`)?.dataset.ready === "true";

describe("widget glue", () => {
  it("requests chunks after render (no binary initial state) and draws", async () => {
    const { model, el } = mountWith({}, { offset: true });
    expect(model.log.sent[0]).toEqual({ type: "request", keys: ["top:self:0"] });
    await until(() => ready(el, "head-view"));
    expect(el.querySelector('[data-testid="layer-select"]')).not.toBeNull();
  });

  it("works with Colab's Uint8Array buffers", async () => {
    const { el } = mountWith({ view: "model" }, { colab: true });
    await until(() => ready(el, "model-view"));
  });

  it("store → traits: a swatch click sets heads and saves", async () => {
    const { model, el } = mountWith();
    await until(() => ready(el, "head-view"));
    el.querySelector<HTMLButtonElement>('[data-head="0"]')!.click();
    expect(model.get("heads")).toEqual([1, 2]);
    expect(model.log.saves).toBe(1);
  });

  it("traits → views: Python changing view/layer shows in the browser", async () => {
    const { model, el } = mountWith();
    await until(() => ready(el, "head-view"));
    model.kernelSet("view", "neuron");
    model.kernelSet("layer", 1);
    await until(() => ready(el, "neuron-view"));
    expect(model.log.sent.flatMap((m) => (m as { keys: string[] }).keys)).toContain("qk:self:1:0");
    expect(el.querySelector<HTMLSelectElement>('[data-testid="layer-select"]')!.value).toBe("1");
    expect(el.querySelector('[data-testid="tab-neuron"]')!.getAttribute("aria-selected")).toBe("true");
  });

  it("views stay in sync: a model-view click opens the head view", async () => {
    const { model, el } = mountWith({ view: "model" });
    await until(() => ready(el, "model-view"));
    const canvas = el.querySelector<HTMLCanvasElement>('[data-testid="model-canvas"]')!;
    canvas.dispatchEvent(new MouseEvent("click", { clientX: 40, clientY: 20, bubbles: true }));
    expect(model.get("view")).toBe("head");
    await until(() => ready(el, "head-view"));
  });

  it("keyboard: arrows move the query, ] changes layer, →/← change head in the neuron view", async () => {
    const { model, el } = mountWith({ view: "neuron" });
    await until(() => ready(el, "neuron-view"));
    const root = el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!;
    expect(root.tabIndex).toBe(0);
    const key = (k: string) => root.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
    expect(model.get("query")).toBe(1); // the neuron view says the query it shows: the first non-special token
    key("ArrowDown");
    expect(model.get("query")).toBe(2);
    key("ArrowUp");
    expect(model.get("query")).toBe(1);
    key("ArrowDown");
    expect(model.get("query")).toBe(2);
    key("]");
    expect(model.get("layer")).toBe(1);
    key("ArrowRight");
    expect(model.get("head")).toBe(1);
    key("ArrowLeft");
    expect(model.get("head")).toBe(0);
  });

  it("keyboard: with no query, ↓ starts at the stream's default one (a causal stream's last ordinary token)", async () => {
    for (const [causal, expected] of [[true, 4], [false, 1]] as const) {
      const f = makeFixture({ layers: 2, heads: 3 }); // [CLS] tok1 .. tok4 [PAD]
      f.meta.streams.self!.causal = causal;
      const model = mockModel(f, { view: "model" });
      const el = document.createElement("div");
      document.body.append(el);
      const cleanup = widget.render({ model, el });
      await until(() => ready(el, "model-view"));
      expect(model.get("query")).toBeNull(); // the model view shows no query
      el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
      expect(model.get("query")).toBe(expected);
      cleanup?.();
    }
  });

  it("theme trait sets data-theme on the root", async () => {
    const { model, el } = mountWith({ theme: "dark" });
    const root = el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!;
    expect(root.dataset.theme).toBe("dark");
    model.kernelSet("theme", "light");
    expect(root.dataset.theme).toBe("light");
  });

  it("auto theme follows JupyterLab's data-jp-theme-light", async () => {
    const { model, el } = mountWith({ theme: "auto" });
    const root = el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!;
    document.body.dataset.jpThemeLight = "false";
    await until(() => root.dataset.theme === "dark");
    document.body.dataset.jpThemeLight = "true";
    await until(() => root.dataset.theme === "light");
    delete document.body.dataset.jpThemeLight;
    expect(model.get("theme")).toBe("auto");
  });

  it("shows a message for an error chunk", async () => {
    const f = makeFixture();
    const model = mockModel(f);
    const emit = (c: unknown) => { for (const fn of model.handlers.get("msg:custom") ?? []) fn(c, []); };
    model.send = ((c: { keys: string[] }) => {
      setTimeout(() => emit({ type: "chunks", chunks: c.keys.map((key) => ({ key, error: "kernel restarted" })) }), 0);
    }) as typeof model.send;
    const el = document.createElement("div");
    document.body.append(el);
    widget.render({ model, el });
    await until(() => /Could not load the head view's lines of layer \d+: kernel restarted/.test(el.textContent ?? ""));
    expect(el.querySelector('[role="alert"]')).not.toBeNull();
  });

  it("two widgets on a page are independent", async () => {
    const a = mountWith();
    const b = mountWith();
    await until(() => ready(a.el, "head-view") && ready(b.el, "head-view"));
    a.el.querySelector<HTMLButtonElement>('[data-head="1"]')!.click();
    expect(a.model.get("heads")).toEqual([0, 2]);
    expect(b.model.get("heads")).toEqual([0, 1, 2]);
  });

  it("several streams: a stream selector; cross-attention puts target queries left, source keys right", async () => {
    const { model, el } = mountWith({}, {}, { target: 4 });
    await until(() => ready(el, "head-view"));
    const sel = el.querySelector<HTMLSelectElement>('[data-testid="stream-select"]')!;
    expect([...sel.options].map((o) => o.value)).toEqual(["self", "cross"]);
    sel.value = "cross";
    sel.dispatchEvent(new Event("change"));
    expect(model.get("stream")).toBe("cross");
    await until(() => ready(el, "head-view") && model.log.sent.some((m) => (m as { keys: string[] }).keys.includes("top:cross:0")));
    await until(() => el.querySelectorAll('[data-side="query"] [data-i]').length === 4);
    expect(el.querySelector('[data-side="query"] [data-i="0"]')!.textContent).toBe("out0");
    expect(el.querySelectorAll('[data-side="key"] [data-i]').length).toBe(6);
    model.kernelSet("view", "neuron");
    await until(() => ready(el, "neuron-view"));
    expect(el.querySelectorAll('[data-testid="neuron-view"] [data-key]').length).toBe(6);
  });

  it("cleanup calls off for every on and empties el", async () => {
    const { model, el, cleanup } = mountWith();
    await until(() => ready(el, "head-view"));
    (cleanup as () => void)();
    expect(model.listenerCount()).toBe(0);
    expect(model.log.off).toBe(model.log.on);
    expect(el.children.length).toBe(0);
  });

  it("a stream of null (the schema's default) or one the trace lacks shows its first stream", async () => {
    for (const stream of [null, "decoder"]) {
      const { el, model } = mountWith({ stream }, {}, { target: 4 });
      await until(() => ready(el, "head-view"));
      expect(model.log.sent[0]).toEqual({ type: "request", keys: ["top:self:0"] });
      expect(el.querySelector<HTMLSelectElement>('[data-testid="stream-select"]')!.value).toBe("self");
    }
  });

  it("an empty _meta shows a message, not a blank cell", () => {
    const f = makeFixture();
    const model = mockModel(f, { _meta: {} });
    const el = document.createElement("div");
    widget.render({ model, el });
    expect(el.textContent).toMatch(/no attention data/);
  });
});

describe("auto theme outside JupyterLab", () => {
  afterEach(() => { document.body.className = ""; document.body.style.background = ""; });

  it("follows VS Code's body class", async () => {
    document.body.classList.add("vscode-dark");
    const { el } = mountWith({ theme: "auto" });
    expect(el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!.dataset.theme).toBe("dark");
  });

  it("follows the nearest opaque background, across a shadow root", async () => {
    const host = document.createElement("div");
    host.style.background = "rgb(20, 20, 20)";
    document.body.append(host);
    const shadow = host.attachShadow({ mode: "open" });
    const el = document.createElement("div");
    shadow.append(el);
    const f = makeFixture();
    widget.render({ model: mockModel(f, { theme: "auto" }), el });
    expect(el.querySelector<HTMLElement>('[data-testid="attnscope-root"]')!.dataset.theme).toBe("dark");
  });
});
