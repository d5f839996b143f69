// What the controls call each schema value. Records keyed by the TypeScript
// unions: tsc wants a label for every member, and tests/js/selection.test.ts
// wants every value the schema lists to have one, so neither side can drift.
import type { CompareSide, PairFilter, ThemeSetting, ViewName } from "./wire/types";

export const VIEW_LABELS: Readonly<Record<ViewName, string>> = { head: "Head", model: "Model", neuron: "Neuron", image: "Image" };

export const PAIR_FILTER_LABELS: Readonly<Record<PairFilter, string>> = {
  all: "pairs: all", AA: "A → A", AB: "A → B", BA: "B → A", BB: "B → B",
};

export const THEME_LABELS: Readonly<Record<ThemeSetting, string>> = {
  auto: "theme: auto", light: "theme: light", dark: "theme: dark",
};

export const COMPARE_SIDE_LABELS: Readonly<Record<CompareSide, string>> = { a: "A", b: "B", diff: "A − B" };
