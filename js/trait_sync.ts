// The selection between a model's traits and the app's store, both ways.
import { DEFAULT_SELECTION, SELECTION_KEYS } from "./selection";
import { sameValue } from "./state";
import type { ModelHost } from "./traits";
import type { AppState, Cleanup, Meta, Selection, Store, ViewName } from "./wire/types";

/** The model's selection, the schema's default for each trait it lacks; the stream resolved against `meta`. */
export function readSelection(model: ModelHost, meta: Meta): Selection {
  const sel: Record<string, unknown> = { ...DEFAULT_SELECTION };
  for (const k of SELECTION_KEYS) {
    const v = model.get(k);
    if (v !== undefined) sel[k] = v;
  }
  // The default stream (null) and a stream this trace lacks both mean its first one.
  if (typeof sel.stream !== "string" || !meta.streams[sel.stream]) sel.stream = Object.keys(meta.streams)[0];
  return sel as unknown as Selection;
}

/**
 * Trait changes go into the store; store changes go out to the traits, saved
 * once per change. A view not in `offered` stays in the browser: Python would
 * refuse it, and the app redirects it to one it offers. Returns the cleanup.
 */
export function syncSelection(model: ModelHost, store: Store<AppState>, offered: readonly ViewName[]): Cleanup {
  const handlers = SELECTION_KEYS.map((k) => {
    const fn = (): void => {
      const v = model.get(k);
      // null clears a selected token, the step or the ranking; for any other trait it means "not set": keep ours.
      if (v !== undefined && v !== null || k === "query" || k === "key" || k === "step" || k === "rank_by") store.set({ [k]: v } as Partial<AppState>);
    };
    model.on(`change:${k}`, fn);
    return [k, fn] as const;
  });
  const unsub = store.subscribe((changed) => {
    const state = store.get(); // fresh even when a subscriber set more in between
    let dirty = false;
    for (const k of SELECTION_KEYS) {
      if (!changed.has(k)) continue;
      if (k === "view" && !offered.includes(state.view)) continue;
      if (!sameValue(model.get(k), state[k])) { model.set(k, state[k]); dirty = true; }
    }
    if (dirty) model.save_changes();
  });
  return () => {
    unsub();
    for (const [k, fn] of handlers) model.off(`change:${k}`, fn);
  };
}
