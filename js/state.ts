// A tiny selection store: one per widget instance, never module-level.
import type { Store } from "./wire/types";

export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => v === b[i]);
  }
  return false;
}

export function createStore<S extends object>(initial: S): Store<S> {
  let state = { ...initial };
  const subs = new Set<(changed: Set<keyof S>, state: S) => void>();
  return {
    get: () => state,
    set(patch) {
      const changed = new Set<keyof S>();
      for (const k of Object.keys(patch) as (keyof S)[]) {
        const v = patch[k];
        if (v === undefined) continue;
        if (!sameValue(state[k], v)) changed.add(k);
      }
      if (!changed.size) return;
      state = { ...state, ...patch };
      for (const fn of [...subs]) fn(changed, state);
    },
    subscribe(fn) {
      subs.add(fn);
      return () => { subs.delete(fn); };
    },
  };
}
