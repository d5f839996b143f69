// The selection schema (src/attnscope/encode/selection.json) is the only place the
// selection is defined; these check at run time what tsc cannot see in a JSON import:
// the literal values, against the TypeScript unions the code is written with.
import schema from "../../src/attnscope/encode/selection.json";
import { COMPARE_SIDE_LABELS, PAIR_FILTER_LABELS, THEME_LABELS, VIEW_LABELS } from "../../js/labels";
import { COMPARE_SIDES, DEFAULT_SELECTION, PAIR_FILTERS, SELECTION_KEYS, THEMES, VIEWS } from "../../js/selection";

const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

describe("selection schema", () => {
  it("gives the selection keys in the schema's order", () => {
    expect(SELECTION_KEYS).toEqual(Object.keys(schema.fields));
  });

  it("gives each field the schema's default (stream null: the first stream)", () => {
    for (const k of SELECTION_KEYS) expect(DEFAULT_SELECTION[k], k).toEqual(schema.fields[k].default);
    expect(DEFAULT_SELECTION.stream).toBeNull();
  });

  it("gives the schema's lists of views, pair filters and themes, in order", () => {
    expect(VIEWS).toEqual(schema.views);
    expect(PAIR_FILTERS).toEqual(schema.pair_filters);
    expect(THEMES).toEqual(schema.themes);
    expect(COMPARE_SIDES).toEqual(schema.compare_sides);
  });

  it("labels exactly the values the schema lists (the TypeScript unions match the schema)", () => {
    expect(sorted(Object.keys(VIEW_LABELS))).toEqual(sorted(VIEWS));
    expect(sorted(Object.keys(PAIR_FILTER_LABELS))).toEqual(sorted(PAIR_FILTERS));
    expect(sorted(Object.keys(THEME_LABELS))).toEqual(sorted(THEMES));
    expect(sorted(Object.keys(COMPARE_SIDE_LABELS))).toEqual(sorted(COMPARE_SIDES));
  });

  it("has defaults that are allowed values", () => {
    expect(VIEWS).toContain(DEFAULT_SELECTION.view);
    expect(PAIR_FILTERS).toContain(DEFAULT_SELECTION.pair_filter);
    expect(THEMES).toContain(DEFAULT_SELECTION.theme);
  });

  it("cannot be changed through its defaults", () => {
    expect(Object.isFrozen(DEFAULT_SELECTION)).toBe(true);
    expect(Object.isFrozen(DEFAULT_SELECTION.heads)).toBe(true);
  });
});
