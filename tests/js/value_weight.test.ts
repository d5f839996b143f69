import { describe, expect, it } from "vitest";
import { decodeTop, densify, type Rows } from "../../js/views/head/head_transform";
import { valueWeighted } from "../../js/views/value_weight";

const round = (r: Rows): number[] => Array.from(densify(r).value, (v) => Math.round(v * 1e6) / 1e6);

describe("value-weighted rows", () => {
  it("is α·norm renormalised per row, the closed form on uniform attention", () => {
    // one head, 2 queries, 4 keys; uniform rows; the last key's value 5 times the others'
    const rows: Rows = { heads: 1, queries: 2, keys: 4, slots: 4, index: null, value: Float32Array.from([0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0, 0]) };
    const norm = Float32Array.from([1, 1, 1, 5]);
    const rowsum = Float32Array.from([2, 1]);
    expect(round(valueWeighted(rows, { norm, rowsum }))).toEqual([0.125, 0.125, 0.125, 0.625, 0.5, 0.5, 0, 0]);
  });

  it("gives top-key rows the same weights as the dense row (row sums come from the chunk)", () => {
    const top = { index: Uint16Array.from([2, 0]), weight: Uint8Array.from([255, 85]), rowmax: Float32Array.from([0.6]), queries: 1, slots: 2 };
    const sparse = decodeTop(top, 1, 3);
    const norm = Float32Array.from([2, 1, 0.5]);
    const dense: Rows = { heads: 1, queries: 1, keys: 3, slots: 3, index: null, value: Float32Array.from([0.2, 0.2, 0.6]) };
    const rowsum = Float32Array.from([0.2 * 2 + 0.2 * 1 + 0.6 * 0.5]);
    const fromTop = round(valueWeighted(sparse, { norm, rowsum }));
    const whole = round(valueWeighted(dense, { norm, rowsum }));
    expect(fromTop[0]).toBeCloseTo(whole[0] as number, 6);
    expect(fromTop[2]).toBeCloseTo(whole[2] as number, 6);
    const sum = densify(valueWeighted(dense, { norm, rowsum })).value.reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 6); // float32: within 5e-7
  });

  it("leaves a row with no value-weighted mass empty", () => {
    const rows: Rows = { heads: 1, queries: 1, keys: 2, slots: 2, index: null, value: Float32Array.from([0.5, 0.5]) };
    expect(round(valueWeighted(rows, { norm: Float32Array.from([0, 0]), rowsum: Float32Array.from([0]) }))).toEqual([0, 0]);
  });
});

describe("value-weighted thumbnails (model view)", () => {
  it("rescale each cell to its own largest value-weighted weight (closed form, unpooled)", async () => {
    const { weightThumbs } = await import("../../js/views/model/model_value");
    const { thumbValue } = await import("../../js/views/model/model_grid");
    // α = [[1, 0], [0.5, 0.5]], norms [1, 3]: rows sum 1 and 2, so weighted [[1, 0], [0.25, 0.75]]
    const byte = (r: number): number => (r > 0 ? Math.round(255 + (254 / 6) * Math.log10(r)) : 0);
    const thumbs = Uint8Array.from([byte(1), 0, byte(0.5), byte(0.5)]);
    const out = weightThumbs(thumbs, 1, 1, 2, 2, [{ norm: Float32Array.from([1, 3]), rowsum: Float32Array.from([1, 2]) }], 2, 2);
    const back = Array.from(out, thumbValue);
    expect(back[0]).toBe(1);
    expect(back[1]).toBe(0);
    // One log-scale byte is a factor 10^(6/254) ≈ 1.056: the input byte and the output byte each within half a step.
    expect(Math.abs(Math.log10((back[2] as number) / 0.25))).toBeLessThan(6 / 254 + 1e-9);
    expect(Math.abs(Math.log10((back[3] as number) / 0.75))).toBeLessThan(6 / 254 + 1e-9);
  });
});
