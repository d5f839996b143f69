// Honest about the kernel (issue 40, item 4): a model with no comm (a docs page's html-manager, a
// notebook JupyterLab reopened and restored from its saved state) answers every request its saved
// state lacks at once with "run the cell to explore further", never "no answer … busy or lost".
import { hasNoKernel, kernelLink } from "../../js/kernel_link";
import { isolate } from "../../js/label_text";
import { NEEDS_KERNEL, SAVED_NOTE, savedNote } from "../../js/saved";
import widget from "../../js/widget";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, mockModel, until } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

type Model = ReturnType<typeof mockModel>;

/** An ipywidgets model (what anywidget's proxy hides) holding `meta`, with or without a comm. */
const backbone = (meta: unknown, comm: boolean) => ({ get: (k: string) => (k === "_meta" ? meta : undefined), comm_live: comm, ...(comm ? { comm: {} } : {}) });

function mountUnder(manager: (model: Model) => object | undefined, traits: Record<string, unknown> = {}) {
  const f = makeFixture({ layers: 2, heads: 3 });
  const model = mockModel(f, traits);
  const m = manager(model);
  if (m) Object.assign(model, { widget_manager: m });
  const el = document.createElement("div");
  document.body.append(el);
  widget.render({ model, el });
  const notes = (): string => el.querySelector(".attnscope-notes")?.textContent ?? "";
  return { f, model, el, notes };
}

// @jupyter-widgets/html-manager: makes comms, has no kernel.
const htmlManager = () => ({ _create_comm: () => Promise.reject(new Error("no comms")), _models: {} });
// JupyterLab's manager: a kernel, and every model by id; a reopened notebook's model has no comm.
const labManager = (comm: boolean) => (model: Model) => ({
  kernel: {},
  _create_comm: () => undefined,
  _models: { other: Promise.resolve(backbone({}, true)), mine: Promise.resolve(backbone(model.get("_meta"), comm)), pending: new Promise(() => undefined) },
});

describe("a widget with no kernel behind it", () => {
  it("under html-manager answers at once, sends nothing and says so in its note", async () => {
    const { model, el, notes } = mountUnder(htmlManager);
    await until(() => (el.textContent ?? "").includes("run the cell to explore further"), 500);
    expect(model.log.sent).toEqual([]);
    expect(el.textContent).not.toContain("busy");
    expect(notes()).toContain("saved widget state holds none of this widget's data");
  });

  it("restored by JupyterLab from a reopened notebook (no comm, a kernel running) does the same", async () => {
    const { model, el, notes } = mountUnder(labManager(false));
    await until(() => (el.textContent ?? "").includes("run the cell to explore further"), 500);
    expect(model.log.sent).toEqual([]);
    expect(el.textContent).not.toContain("busy or lost");
    expect(notes()).toContain("no kernel is connected to it");
  });

  it("with a live comm asks the kernel", async () => {
    const { model, el, notes } = mountUnder(labManager(true));
    await until(() => model.log.sent.length > 0, 500);
    expect(model.log.sent[0]).toEqual({ type: "request", keys: ["top:self:0"] });
    await until(() => el.querySelector<HTMLElement>('[data-testid="head-view"]')?.dataset.ready === "true");
    expect(notes()).toBe("");
  });

  it("where the host does not say (Colab, marimo, the page's own host) asks as before", async () => {
    const { model } = mountUnder(() => undefined);
    expect(model.log.sent[0]).toEqual({ type: "request", keys: ["top:self:0"] });
  });
});

describe("kernelLink", () => {
  it("reads html-manager at once, a Lab model from the manager's models, and knows nothing elsewhere", async () => {
    const f = makeFixture();
    const plain = mockModel(f);
    expect(kernelLink(plain).settled()).toBe(true);
    expect(kernelLink(plain).none()).toBeNull();
    const html = Object.assign(mockModel(f), { widget_manager: htmlManager() });
    expect(hasNoKernel(html)).toBe(true);
    expect(kernelLink(html).none()).toBe(true);
    for (const comm of [false, true]) {
      const lab = mockModel(f);
      Object.assign(lab, { widget_manager: labManager(comm)(lab) });
      expect(hasNoKernel(lab)).toBe(false);
      const link = kernelLink(lab);
      await link.ready;
      expect(link.settled()).toBe(true);
      expect(link.none()).toBe(!comm);
    }
    // A model that is not an ipywidgets one (no comm_live): it cannot tell.
    const foreign = mockModel(f);
    const { comm_live: _, ...bare } = backbone(foreign.get("_meta"), false);
    Object.assign(foreign, { widget_manager: { kernel: {}, _models: { me: Promise.resolve(bare) } } });
    const unsure = kernelLink(foreign);
    await unsure.ready;
    expect(unsure.none()).toBeNull();
    // A manager whose models are all someone else's: it cannot tell.
    const stranger = mockModel(f);
    Object.assign(stranger, { widget_manager: { kernel: {}, _models: { x: Promise.resolve(backbone({}, false)) } } });
    const link = kernelLink(stranger);
    await link.ready;
    expect(link.none()).toBeNull();
  });
});

describe("the saved-state note", () => {
  it("says what the saved state holds, in the views' words", () => {
    const { meta } = makeFixture({ layers: 2, heads: 3 });
    const note = savedNote({ "thumbs:self": { arrays: [], data: "" }, "tile:self:1:2:0:0:0": { arrays: [], data: "" } }, meta);
    expect(note.startsWith(SAVED_NOTE)).toBe(true);
    expect(note).toContain("It holds the model view's thumbnails; the overview of layer 1 · head 2.");
    expect(NEEDS_KERNEL).toContain("run the cell to explore further");
    // Isolated among the other notes like each of them.
    expect(isolate(note)).toBe(`\u2068${note}\u2069`);
  });
});
