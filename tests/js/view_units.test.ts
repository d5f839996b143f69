// A view's code comes in when the view is first shown (js/view_units.ts, js/app.ts): until then
// the app says it is loading; a view whose code cannot come says why in its place.
import type { ViewRenderer, ViewUnit } from "../../js/view_units";
import type { Meta } from "../../js/wire/types";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

describe("views loaded on demand", () => {
  it("draws a view once its code arrives, and says why when it cannot come", async () => {
    vi.resetModules(); // a registry with no view in it, as a page's loader starts
    const { renderApp } = await import("../../js/app");
    const units = await import("../../js/view_units");
    const { renderHeadView } = await import("../../js/views/head/head");
    const asked: ViewUnit[] = [];
    let release: (() => void) | null = null;
    units.setViewLoader((unit) => {
      asked.push(unit);
      if (unit === "head") return new Promise<ViewRenderer>((resolve) => { release = () => resolve(renderHeadView); });
      return Promise.reject(new Error(`the code of the ${unit} view is not in this page`));
    });
    const f = makeFixture();
    const meta: Meta = { ...f.meta, views: ["head", "model"] };
    const ctx = viewContext(f, { view: "head" });
    const cleanup = renderApp({ meta, store: ctx.store, data: ctx.data, el: ctx.root });
    expect(ctx.root.querySelector('[data-testid="view-loading"]')?.textContent).toMatch(/Loading the .* view/);
    expect(ctx.root.querySelector('[data-testid="head-view"]')).toBeNull();
    expect(asked).toEqual(["head"]);
    (release as unknown as () => void)();
    await until(() => ctx.root.querySelector('[data-testid="head-view"]') !== null);
    expect(ctx.root.querySelector('[data-testid="view-loading"]')).toBeNull();

    ctx.store.set({ view: "model" });
    await until(() => ctx.root.querySelector('[data-testid="view-failed"]') !== null);
    expect(ctx.root.querySelector('[data-testid="view-failed"]')?.textContent).toContain("the code of the model view is not in this page");
    // Back to the head view: its code is in now, so it draws at once, with no second request.
    ctx.store.set({ view: "head" });
    expect(ctx.root.querySelector('[data-testid="head-view"]')).not.toBeNull();
    expect(asked).toEqual(["head", "model"]);
    cleanup();
  });
});
