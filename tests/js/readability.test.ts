// What a reader sees: text that contrasts with its background, numbers that fit their cells.
import { headColor, luminance, parseColor, textOn } from "../../js/colors";
import { fmtWeight } from "../../js/views/common";
import { renderHeadView } from "../../js/views/head/head";
import { renderNeuronView } from "../../js/views/neuron/neuron";
import { installCanvas } from "./helpers/canvas";
import { makeFixture, until, viewContext } from "./helpers/fixture";

beforeAll(installCanvas);
afterEach(() => { document.body.replaceChildren(); });

const contrast = (a: string, b: string): number => {
  const [la, lb] = [a, b].map((c) => luminance(parseColor(c)) + 0.05) as [number, number];
  return Math.max(la, lb) / Math.min(la, lb);
};

describe("text on colours", () => {
  it("picks black on light colours and white on dark ones", () => {
    expect(textOn("#F0E442")).toBe("#000000"); // Okabe–Ito yellow (head 6)
    expect(textOn("#BBBBBB")).toBe("#000000"); // head 7 on a dark theme
    expect(textOn("#000000")).toBe("#ffffff");
    expect(textOn("#0072B2")).toBe("#ffffff");
  });

  it("every head's pressed swatch label has a contrast of at least 4.5:1 (WCAG AA)", () => {
    for (const dark of [false, true]) {
      for (let i = 0; i < 64; i++) {
        const c = headColor(i, dark);
        expect(contrast(c, textOn(c)), `head ${i} (${c})`).toBeGreaterThanOrEqual(4.5);
      }
    }
  });

  it("the head view gives each swatch the label colour for its head", async () => {
    const ctx = viewContext(makeFixture({ heads: 8 }));
    renderHeadView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="head-view"]')!;
    await until(() => view.dataset.ready === "true");
    const sw = [...view.querySelectorAll<HTMLElement>("[data-head]")];
    expect(sw.map((b) => b.style.getPropertyValue("--swatch-fg"))).toEqual(
      sw.map((b) => textOn(b.style.getPropertyValue("--swatch"))),
    );
    expect(sw[6]!.style.getPropertyValue("--swatch-fg")).toBe("#000000");
  });
});

describe("weights in the neuron view", () => {
  it("fit in 7 characters, small ones in exponent form", () => {
    expect(fmtWeight(0.279)).toBe("0.279");
    expect(fmtWeight(0.00184)).toBe("1.8e-3"); // one format below 0.01, beside 9.8e-5
    expect(fmtWeight(0.000358)).toBe("3.6e-4");
    expect(fmtWeight(0.0000568)).toBe("5.7e-5");
    expect(fmtWeight(0)).toBe("0");
    expect(fmtWeight(1)).toBe("1");
    for (let e = -12; e <= 0; e += 0.37) expect(fmtWeight(10 ** e).length).toBeLessThanOrEqual(7);
  });

  it("the rows show them so", async () => {
    const f = makeFixture({});
    const ctx = viewContext(f, { view: "neuron", layer: 1, head: 2, query: 3 });
    renderNeuronView(ctx);
    const view = ctx.root.querySelector<HTMLElement>('[data-testid="neuron-view"]')!;
    await until(() => view.dataset.ready === "true");
    const rows = [...view.querySelectorAll<HTMLElement>("[data-key]")].filter((r) => !r.hidden);
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const shown = r.querySelector(".attnscope-nv-wcell .attnscope-nv-num")!.textContent!;
      expect(shown).toBe(fmtWeight(Number(r.dataset.weight)));
    }
  });
});
