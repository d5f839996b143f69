// A trace of a generation: the step <-> query link, the head view's step control,
// generated / not-yet-generated tokens, the model view's generated rows.
import { renderApp } from "../../js/app";
import { thumbsKey } from "../../js/wire/keys";
import { bindStep, generationClasses, generationOf, stepOfQuery } from "../../js/generation";
import { renderHeadView } from "../../js/views/head/head";
import { PLAY_MS } from "../../js/views/head/head_step";
import { renderModelView } from "../../js/views/model/model";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

const GENERATED = 3; // of the fixture's 6 tokens: prompt 0..2, generated 3..5
const el = <T extends Element>(root: ParentNode, testid: string): T => {
  const e = root.querySelector(`[data-testid="${testid}"]`);
  if (!e) throw new Error(`no ${testid}`);
  return e as T;
};

describe("generation helpers", () => {
  it("find the generation of the stream shown, and map steps to queries", () => {
    const meta = makeFixture({ generated: GENERATED }).meta;
    const g = generationOf(meta, "self")!;
    expect(g).toEqual({ prompt: 3, count: 3 });
    expect(generationOf(meta, "cross")).toBeNull();
    expect(generationOf(makeFixture().meta, "self")).toBeNull();
    // Step s is the choice of generated token s: its query is the token before (step 0: the prompt's last).
    expect([1, 2, 4, 5, null].map((q) => stepOfQuery(g, q))).toEqual([null, 0, 2, null, null]);
    expect(generationClasses(g, null, 2)).toBe("");
    expect(generationClasses(g, null, 3)).toBe(" is-generated is-output-start");
    expect(generationClasses(g, null, 4)).toBe(" is-generated");
    expect(generationClasses(g, 0, 4)).toBe(" is-generated is-future");
    expect(generationClasses(g, 1, 4)).toBe(" is-generated is-future"); // token 1 being chosen
    expect(generationClasses(g, 2, 4)).toBe(" is-generated");
  });

  it("bindStep: the step moves the query; another generated query moves the step; a prompt query ends it", () => {
    const f = makeFixture({ generated: GENERATED });
    const { store } = viewContext(f, { step: 1 });
    const unbind = bindStep(f.meta, store);
    expect(store.get().query).toBe(3); // a step given at the start
    store.set({ step: 2 });
    expect(store.get().query).toBe(4);
    store.set({ query: 2 }); // the prompt's last token chose the first generated one
    expect(store.get().step).toBe(0);
    store.set({ query: 1 });
    expect(store.get().step).toBeNull();
    expect(store.get().query).toBe(1);
    store.set({ query: 3 }); // no step shown: choosing a query starts none
    expect(store.get().step).toBeNull();
    store.set({ step: 99 }); // clamped to the last step
    expect(store.get().step).toBe(2);
    unbind();
  });
});

async function headView(patch = {}) {
  const f = makeFixture({ generated: GENERATED });
  const ctx = viewContext(f, patch);
  const unbind = bindStep(f.meta, ctx.store);
  const cleanup = renderHeadView(ctx);
  const view = el<HTMLElement>(ctx.root, "head-view");
  await until(() => view.dataset.ready === "true");
  const rows = (side: string) => [...view.querySelectorAll<HTMLElement>(`[data-side="${side}"] [data-i]`)];
  return { ...ctx, view, rows, cleanup: () => { cleanup(); unbind(); } };
}

describe("head view of a generation", () => {
  it("marks generated tokens and the prompt/output boundary, and offers a step control", async () => {
    const { view, rows } = await headView();
    const keys = rows("key");
    expect(keys.map((r) => r.classList.contains("is-generated"))).toEqual([false, false, false, true, true, true]);
    expect(keys.map((r) => r.classList.contains("is-output-start"))).toEqual([false, false, false, true, false, false]);
    expect(keys.some((r) => r.classList.contains("is-future"))).toBe(false);
    expect(el<HTMLElement>(view, "step-caption").textContent).toBe("3 generated");
    expect(makeFixture().meta.generation).toBeNull();
  });

  it("steps: the query moves to each generated token, later tokens fade, the caption names it", async () => {
    const { store, view, rows } = await headView();
    const control = el<HTMLElement>(view, "step-control");
    el<HTMLButtonElement>(view, "step-next").click();
    expect(store.get().step).toBe(0);
    expect(store.get().query).toBe(2); // the first generated token's step: the prompt's last token
    await until(() => control.dataset.step === "0");
    const future = () => rows("key").map((r) => r.classList.contains("is-future"));
    await until(() => future()[3] === true);
    expect(future()).toEqual([false, false, false, true, true, true]);
    expect(rows("query")[2]!.classList.contains("is-selected")).toBe(true);
    expect(el<HTMLElement>(view, "step-caption").textContent).toBe('step 1/3: "tok2" → "tok3"');
    // Lines come from the step's query only, to the keys it could see.
    expect(Number(view.dataset.lines)).toBeGreaterThan(0);
    expect(Number(view.dataset.lines)).toBeLessThanOrEqual(store.get().heads.length * 6);

    const slider = el<HTMLInputElement>(view, "step-slider");
    slider.value = "2";
    slider.dispatchEvent(new Event("input"));
    expect(store.get().query).toBe(4);
    await until(() => el<HTMLButtonElement>(view, "step-next").disabled);
    expect(el<HTMLElement>(view, "step-caption").textContent).toBe('step 3/3: "tok4" → "[PAD]"');
    el<HTMLButtonElement>(view, "step-prev").click();
    expect(store.get().step).toBe(1);
    el<HTMLButtonElement>(view, "step-all").click();
    expect(store.get().step).toBeNull();
    expect(store.get().query).toBeNull();
    await until(() => !future().some(Boolean));
  });

  it("plays the generation one step at a time and stops at the last", async () => {
    vi.useFakeTimers();
    const { store, view, cleanup } = await headViewWithFakeTimers();
    const play = el<HTMLButtonElement>(view, "step-play");
    play.click();
    expect(store.get().step).toBe(0);
    expect(el<HTMLElement>(view, "step-control").dataset.playing).toBe("true");
    vi.advanceTimersByTime(PLAY_MS);
    expect(store.get().step).toBe(1);
    vi.advanceTimersByTime(PLAY_MS);
    expect(store.get().step).toBe(2);
    vi.advanceTimersByTime(PLAY_MS);
    expect(store.get().step).toBe(2);
    expect(el<HTMLElement>(view, "step-control").dataset.playing).toBe("false");
    play.click(); // from the end, play starts over
    expect(store.get().step).toBe(0);
    play.click(); // pause
    vi.advanceTimersByTime(3 * PLAY_MS);
    expect(store.get().step).toBe(0);
    play.click();
    cleanup(); // the timer goes with the view
    expect(vi.getTimerCount()).toBe(0);
  });
});

/** The head view with fake timers on: drawn without waiting on real time. */
async function headViewWithFakeTimers() {
  const f = makeFixture({ generated: GENERATED });
  const ctx = viewContext(f);
  const unbind = bindStep(f.meta, ctx.store);
  const cleanup = renderHeadView(ctx);
  const view = el<HTMLElement>(ctx.root, "head-view");
  await vi.runAllTimersAsync();
  return { ...ctx, view, cleanup: () => { cleanup(); unbind(); } };
}

describe("model view of a generation", () => {
  it("shows only the generated rows when asked, from their own thumbnails", async () => {
    const f = makeFixture({ generated: GENERATED });
    const ctx = viewContext(f, { view: "model" });
    const cleanup = renderModelView(ctx);
    const view = el<HTMLElement>(ctx.root, "model-view");
    await until(() => view.dataset.ready === "true");
    const box = el<HTMLInputElement>(view, "generated-only");
    expect(box.closest("label")!.hidden).toBe(false);
    expect(box.checked).toBe(false);
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    expect(ctx.store.get().generated_only).toBe(true);
    await until(() => ctx.requested.flat().includes(thumbsKey("self", 3)));
    expect(thumbsKey("self", 3)).toBe("thumbs:self:3");
    await until(() => view.dataset.ready === "true" && ctx.data.peek("thumbs:self:3") !== undefined);
    cleanup();
  });

  it("hides the option for a trace that is not a generation", async () => {
    const f = makeFixture();
    const ctx = viewContext(f, { view: "model" });
    const cleanup = renderModelView(ctx);
    const view = el<HTMLElement>(ctx.root, "model-view");
    await until(() => view.dataset.ready === "true");
    expect(el<HTMLInputElement>(view, "generated-only").closest("label")!.hidden).toBe(true);
    cleanup();
  });
});

describe("app", () => {
  it("binds the step for every view: the neuron view follows the step's query", async () => {
    const f = makeFixture({ generated: GENERATED });
    const ctx = viewContext(f, { view: "neuron", step: 2 });
    const cleanup = renderApp({ meta: f.meta, store: ctx.store, data: ctx.data, el: ctx.root });
    expect(ctx.store.get().query).toBe(4);
    ctx.store.set({ query: 0 });
    expect(ctx.store.get().step).toBeNull();
    cleanup();
  });
});
