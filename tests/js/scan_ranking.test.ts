// The model view ranked by a scan (widget `scan=`, issue 24): the `stats:` chunk carries
// `scan:<c>` means and `scan:<c>:spread` arrays, and `_meta.statistics` names them.
import { describe, expect, it } from "vitest";
import { cellNumbers, layerRanking, rankWords } from "../../js/views/model_stats";

const f32 = (values: number[]) => ({ dtype: "f32" as const, shape: [1, 3], data: Float32Array.from(values) });
const scanPrev = {
  name: "scan:prev",
  label: "previous token: mean over 4 inputs (± spread across them)",
  formula: "",
  source: "",
  spread: "scan:prev:spread",
  inputs: 4,
  over: "inputs",
};

describe("a scan's statistic in the model view", () => {
  it("shows each head's mean with its spread across inputs on hover", () => {
    const chunk = { key: "stats:self", arrays: { prev: f32([0.5, 0.1, 0]), "scan:prev": f32([0.2, 0.75, 0.5]), "scan:prev:spread": f32([0.05, 0.125, NaN]) } };
    const stats = [{ name: "prev", label: "", formula: "", source: "" }, scanPrev];
    expect(cellNumbers(chunk, stats, 3, 0, 1)).toEqual(["prev 0.10", "scan:prev 0.75 ± 0.13"]);
    expect(cellNumbers(chunk, stats, 3, 0, 2)).toEqual(["prev 0.00", "scan:prev 0.50 ± n/a"]);
  });

  it("orders heads by the scan's mean, not by the input's own statistic", () => {
    expect(layerRanking(Float32Array.from([0.2, 0.75, 0.5]), 1, 3)).toEqual([1, 2, 0]);
    expect(layerRanking(Float32Array.from([0.5, 0.1, 0]), 1, 3)).toEqual([0, 1, 2]);
  });

  it("names what the ranking is a mean over", () => {
    expect(rankWords(scanPrev)).toBe("rank: scan:prev · mean over 4 inputs (± spread)");
    expect(rankWords({ ...scanPrev, name: "scan:retrieval", inputs: 6, over: "runs" })).toBe("rank: scan:retrieval · mean over 6 runs (± spread)");
    expect(rankWords({ name: "sink", label: "", formula: "", source: "" })).toBe("rank: sink");
  });
});
