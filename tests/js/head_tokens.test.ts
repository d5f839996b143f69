// The head view's token rows: the focused query's key bars, signed on a comparison's A − B.
import type { RGB } from "../../js/colors";
import { placeRows, type TokenColumn } from "../../js/views/head/head_tokens";
import type { Side } from "../../js/tokens";

const side: Side = { labels: ["a", "b", "c"], raw: ["a", "b", "c"], kinds: ["token", "token", "token"], continues: [false, false, false], segments: null };
const A: RGB = [0, 0, 255], B: RGB = [255, 0, 0];

function column(): TokenColumn {
  return { el: document.createElement("div"), pool: [] };
}

describe("key bars", () => {
  it("draw a negative weight (B attends more) as long as its size, in B's colour", () => {
    const col = column();
    placeRows(col, side, 3, 0, 2, { selected: null, hovered: null, weights: Float32Array.of(0.5, -0.5, 0), barColor: A, negativeColor: B });
    const [up, down, none] = col.pool.map((d) => d.style.boxShadow);
    expect(up).toContain("rgba(0,0,255,0.3)");
    expect(down).toContain("rgba(255,0,0,0.3)");
    expect(up?.split(" ")[1]).toBe("60px"); expect(down?.split(" ")[1]).toBe("60px"); // |w| sets the length
    expect(none).toBe("");
  });

  it("keep one colour without a negative one (a single trace's weights)", () => {
    const col = column();
    placeRows(col, side, 3, 0, 2, { selected: null, hovered: null, weights: Float32Array.of(0.5, 0, 0.25), barColor: A });
    expect(col.pool.filter((d) => d.style.boxShadow.includes("rgba(0,0,255,0.3)"))).toHaveLength(2);
  });
});
