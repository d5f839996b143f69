// The head view's segments panel (js/views/head/head_segments.ts) on a trace's images: the box reads
// "collapse images", and the rows' chunk (heads x S^2) is asked for only once rows are shown.
import { renderHeadView } from "../../js/views/head/head";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

describe("collapse images", () => {
  it("asks for the segments chunk only while segment_rows is on", async () => {
    const f = makeFixture();
    const edges = [0, 1, f.N];
    f.meta.segments = { stream: "self", by: "images", edges, labels: ["a", "img0 (2×2 patches)"], titles: ["", ""] };
    const ctx = viewContext(f, { segment_rows: false });
    const cleanup = renderHeadView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')!;
    await until(() => view.dataset.ready === "true");
    const box = ctx.root.querySelector<HTMLElement>(".attnscope-seg-toggle")!;
    expect(box.hidden).toBe(false);
    expect(box.textContent).toBe("collapse images");
    expect(ctx.root.querySelector<HTMLInputElement>('[data-testid="toggle-segments"]')!.checked).toBe(false);
    expect(view.classList.contains("is-segments")).toBe(false);
    expect(ctx.requested.flat().filter((k) => k.startsWith("segments:"))).toEqual([]);
    ctx.store.set({ segment_rows: true });
    await until(() => ctx.requested.flat().includes("segments:self:0"));
    await until(() => view.classList.contains("is-segments"));
    cleanup();
  });
});
