// The synced selection as the shared schema defines it. Python reads the same
// file (attnscope.encode.selection), so field names, defaults and the lists of
// allowed values are written once, in src/attnscope/encode/selection.json.
import schema from "../src/attnscope/encode/selection.json";
import type { CompareSide, PairFilter, Selection, ThemeSetting, ViewName } from "./wire/types";

/** The selection as traits carry it and the schema gives its defaults: `stream` null stands for the trace's first stream. */
export type SelectionTraits = Omit<Selection, "stream"> & { stream: string | null };

// JSON imports keep property names in their type (though not literal values):
// tsc fails on the line below when the schema's fields and `Selection` drift apart.
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
type Holds<T extends true> = T;
export type SchemaFieldsAreSelectionKeys = Holds<SameKeys<typeof schema.fields, Selection>>;

/** Every synced selection field, in the schema's order. */
export const SELECTION_KEYS: readonly (keyof Selection)[] = Object.freeze(Object.keys(schema.fields) as (keyof Selection)[]);

/**
 * Each field's default. The literal values are the schema's; the vitest in
 * tests/js/selection.test.ts checks them against the TypeScript unions.
 */
export const DEFAULT_SELECTION: Readonly<SelectionTraits> = Object.freeze(
  Object.fromEntries(SELECTION_KEYS.map((k) => {
    const value: unknown = schema.fields[k].default;
    // Frozen so that a reader can never change the default for everyone after it.
    return [k, Array.isArray(value) ? Object.freeze([...value]) : value];
  })) as unknown as SelectionTraits,
);

/** The views in their default tab order. */
export const VIEWS: readonly ViewName[] = Object.freeze([...schema.views] as ViewName[]);
export const PAIR_FILTERS: readonly PairFilter[] = Object.freeze([...schema.pair_filters] as PairFilter[]);
export const THEMES: readonly ThemeSetting[] = Object.freeze([...schema.themes] as ThemeSetting[]);
/** A comparison's sides, in the toggle's order. */
export const COMPARE_SIDES: readonly CompareSide[] = Object.freeze([...schema.compare_sides] as CompareSide[]);
