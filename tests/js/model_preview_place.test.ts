// The model view's enlarged cell stays inside the grid's scroll box: lower rows open it
// upward, and a grid shorter than the preview grows to hold it (it was clipped there).
import { renderModelView } from "../../js/views/model/model";
import { gridGeometry } from "../../js/views/model/model_grid";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

async function hoverLastRow(layers: number, previewHeight: number) {
  const f = makeFixture({ layers, heads: 4 });
  const ctx = viewContext(f, { view: "model" });
  renderModelView(ctx);
  const view = ctx.root.querySelector<HTMLElement>('[data-testid="model-view"]')!;
  await until(() => view.dataset.ready === "true");
  const preview = view.querySelector<HTMLElement>('[data-testid="model-preview"]')!;
  Object.defineProperty(preview, "offsetHeight", { value: previewHeight }); // happy-dom lays nothing out
  const g = gridGeometry(layers, 4, 720);
  const canvas = view.querySelector<HTMLCanvasElement>('[data-testid="model-canvas"]')!;
  canvas.dispatchEvent(new MouseEvent("mousemove", {
    clientX: 34 + g.cell / 2, clientY: 16 + (layers - 1) * (g.cell + 2) + g.cell / 2, bubbles: true,
  }));
  const wrap = preview.parentElement!;
  return { g, top: parseFloat(preview.style.top), minHeight: parseFloat(wrap.style.minHeight || "0") };
}

describe("model view preview placement", () => {
  it("opens upward from the last row, ending inside the grid", async () => {
    const { g, top } = await hoverLastRow(12, 200);
    expect(g.height).toBeGreaterThan(200);
    const cellTop = 16 + 11 * (g.cell + 2);
    expect(top).toBeLessThan(cellTop);
    expect(top + 200).toBeLessThanOrEqual(g.height);
  });

  it("grows a grid shorter than the preview so nothing of it is clipped", async () => {
    const { g, top, minHeight } = await hoverLastRow(2, 400);
    expect(g.height).toBeLessThan(400);
    expect(minHeight).toBe(400);
    expect(top).toBe(0);
  });
});
