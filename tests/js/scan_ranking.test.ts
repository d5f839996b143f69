// The model view ranked by a scan (widget `scan=`, issue 24): the `stats:` chunk carries
// `scan:<c>` means and `scan:<c>:spread` arrays, and `_meta.statistics` names them.
import { describe, expect, it } from "vitest";
import { isolate as iso } from "../../js/label_text";
import type { Side } from "../../js/tokens";
import type { Chunk } from "../../js/wire/types";
import { stepCaption, strongestKey, strongestKeyTies } from "../../js/views/head/head_step";
import { cellNumbers, layerRanking, rankWords } from "../../js/views/model/model_stats";

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
  it("names the input where the hovered head is strongest", () => {
    const chunk = { key: "stats:self", arrays: { "scan:prev": f32([0.2, 0.75, 0.5]), "scan:prev:strongest": f32([2, 0, NaN]) } };
    const stats = [{ ...scanPrev, spread: undefined, strongest: "scan:prev:strongest" }];
    expect(cellNumbers(chunk, stats, 3, 0, 0)).toEqual([`${iso("scan:prev")} 0.20 (strongest: input 2)`]);
    expect(cellNumbers(chunk, stats, 3, 0, 2)).toEqual([`${iso("scan:prev")} 0.50`]);
  });

  it("shows each head's mean with its spread across inputs on hover", () => {
    const chunk = { key: "stats:self", arrays: { prev: f32([0.5, 0.1, 0]), "scan:prev": f32([0.2, 0.75, 0.5]), "scan:prev:spread": f32([0.05, 0.125, NaN]) } };
    const stats = [{ name: "prev", label: "", formula: "", source: "" }, scanPrev];
    expect(cellNumbers(chunk, stats, 3, 0, 1)).toEqual([`${iso("prev")} 0.10`, `${iso("scan:prev")} 0.75 ± 0.13`]);
    expect(cellNumbers(chunk, stats, 3, 0, 2)).toEqual([`${iso("prev")} 0.00`, `${iso("scan:prev")} 0.50 ± n/a`]);
  });

  it("orders heads by the scan's mean, not by the input's own statistic", () => {
    expect(layerRanking(Float32Array.from([0.2, 0.75, 0.5]), 1, 3)).toEqual([1, 2, 0]);
    expect(layerRanking(Float32Array.from([0.5, 0.1, 0]), 1, 3)).toEqual([0, 1, 2]);
  });

  it("names what the ranking is a mean over", () => {
    expect(rankWords(scanPrev)).toBe(`rank: ${iso("scan:prev")} · mean over 4 inputs (± spread)`);
    expect(rankWords({ ...scanPrev, name: "scan:retrieval", inputs: 6, over: "runs" })).toBe(`rank: ${iso("scan:retrieval")} · mean over 6 runs (± spread)`);
    expect(rankWords({ name: "sink", label: "", formula: "", source: "" })).toBe(`rank: ${iso("sink")}`);
    // A trace's statistic whose label names its protocol is offered by that label.
    const induction = { name: "induction", label: "induction (detect_head 'mul' on this input)", formula: "", source: "" };
    expect(rankWords(induction)).toBe(`rank: ${iso("induction (detect_head 'mul' on this input)")}`);
    expect(rankWords({ name: "prev", label: "previous token", formula: "", source: "" })).toBe(`rank: ${iso("prev")}`);
    // A per-head column with a label of its own (segments=) is offered by that label.
    expect(rankWords({ name: "scan:receiver", label: "receiver score (Thought Anchors)", formula: "", source: "" })).toBe(`rank: ${iso("receiver score (Thought Anchors)")}`);
    expect(rankWords({ name: "scan:retrieval", label: "retrieval", formula: "", source: "" })).toBe(`rank: ${iso("scan:retrieval")}`);
    // Hovering a cell names it the same way.
    const receiver = { name: "scan:receiver", label: "receiver score (Thought Anchors)", formula: "", source: "" };
    const chunk = { key: "stats:self", arrays: { "scan:receiver": { dtype: "f32", shape: [1, 1], data: new Float32Array([3.14]) } } } as unknown as Chunk;
    expect(cellNumbers(chunk, [receiver], 1, 0, 0)).toEqual([`${iso("receiver score (Thought Anchors)")} 3.14`]);
  });
});

describe("where one head looked at each generation step", () => {
  // Two heads, three query rows, full rows (no index): bytes of row / rowmax.
  const full = {
    index: null,
    weight: Uint8Array.from([255, 0, 0, 100, 255, 0, 255, 255, 90, /* head 1 */ 255, 0, 0, 255, 255, 0, 10, 20, 255]),
    rowmax: Float32Array.from([1, 0.6, 0.4, 1, 0.5, 0.7]),
    queries: 3,
    slots: 3,
  };
  it("is the row's largest weight, the lowest key on ties, never a later key", () => {
    expect(strongestKey(full, 0, 1)).toBe(1);
    expect(strongestKey(full, 0, 2)).toBe(0); // keys 0 and 1 tie
    expect(strongestKey(full, 1, 1)).toBe(0); // a tie again: the lowest
    expect(strongestKey(full, 1, 2)).toBe(2);
  });
  it("reads top-k rows through their key index, skips later keys, and knows an unloaded row", () => {
    // One head, two query rows of two slots; row 0 is not loaded (rowmax 0).
    const top = { index: Uint32Array.from([0, 0, 1, 0]), weight: Uint8Array.from([0, 0, 40, 255]), rowmax: Float32Array.from([0, 0.9]), queries: 2, slots: 2 };
    expect(strongestKey(top, 0, 1)).toBe(0); // slot 1 holds key 0
    expect(strongestKey({ ...top, index: Uint32Array.from([0, 0, 3, 1]), weight: Uint8Array.from([0, 0, 255, 40]) }, 0, 1)).toBe(1); // key 3 is after the query
    expect(strongestKey(top, 0, 0)).toBe(null);
  });
  it("says so in the step caption", () => {
    const g = { prompt: 3, count: 2 };
    const side = { labels: ["x", "a", "b", "a", "b"] } as unknown as Side;
    const text = (parts: (string | Node)[]) => parts.map((p) => (typeof p === "string" ? p : p.textContent)).join("");
    expect(text(stepCaption(g, 0, side, { head: 2, key: 1 }))).toBe('step 1/2: "b" → "a" · head 2 looked most at "a" (#1)');
    expect(text(stepCaption(g, 0, side))).toBe('step 1/2: "b" → "a"');
  });
  it("counts the keys tied at the top byte, as attnscope.looked_at's tied column", () => {
    expect(strongestKeyTies(full, 0, 2)).toEqual({ key: 0, tied: 1 });
    expect(strongestKeyTies(full, 1, 2)).toEqual({ key: 2, tied: 0 });
    const g = { prompt: 3, count: 2 };
    const side = { labels: ["x", "a", "b", "a", "b"] } as unknown as Side;
    const text = (parts: (string | Node)[]) => parts.map((p) => (typeof p === "string" ? p : p.textContent)).join("");
    expect(text(stepCaption(g, 0, side, { head: 2, key: 1, tied: 1 }))).toBe('step 1/2: "b" → "a" · head 2 looked most at "a" (#1; 1 more key as strong, the lowest named)');
  });
});
