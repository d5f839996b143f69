// A trace of a generation (`_meta.generation`): the prompt, then the tokens the
// model generated. Which rows are generated, the step <-> query link, and the
// classes that mark generated and not-yet-generated tokens. No DOM here.
import type { AppState, Cleanup, Meta, Store } from "./wire/types";

export interface Generation {
  /** Index of the first generated token (the prompt's length). */
  prompt: number;
  /** How many tokens were generated. */
  count: number;
}

/** The generation shown in `stream`, or null (no generation, or it is another stream's). */
export function generationOf(meta: Meta, stream: string): Generation | null {
  const g = meta.generation;
  if (!g || g.stream !== stream || !(g.generated > 0)) return null;
  return { prompt: g.prompt_length, count: g.generated };
}

/**
 * The query row of step `step`, the step that generated token `step`: the token
 * before it, whose attention chose it (the prompt's last token for step 0).
 */
export const queryOfStep = (g: Generation, step: number): number => g.prompt + step - 1;

/** The step whose choice `query` made, or null for a query that chose no generated token (or none). */
export function stepOfQuery(g: Generation, query: number | null): number | null {
  if (query == null) return null;
  const step = query - g.prompt + 1;
  return step >= 0 && step < g.count ? step : null;
}

/** A step kept inside 0 .. count-1. */
export const clampStep = (g: Generation, step: number): number => Math.max(0, Math.min(g.count - 1, step));

/**
 * Extra classes of token `i`: generated tokens (the first of them also starts the
 * output), and at a step the tokens after its own, which were not generated yet.
 */
export function generationClasses(g: Generation | null, step: number | null, i: number): string {
  if (!g || i < g.prompt) return "";
  const start = i === g.prompt ? " is-output-start" : "";
  return step != null && i > queryOfStep(g, step) ? ` is-generated${start} is-future` : ` is-generated${start}`;
}

/**
 * Keep `step` and `query` together in the store: a step moves the query to its
 * token; while a step is shown, choosing another generated query moves the step
 * with it and any other query (or none) ends it. Python's widget does the same.
 */
export function bindStep(meta: Meta, store: Store<AppState>): Cleanup {
  const follow = (changed: Set<keyof AppState>): void => {
    const s = store.get();
    const g = generationOf(meta, s.stream);
    if (!g) {
      if (s.step != null || s.generated_only) store.set({ step: null, generated_only: false });
      return;
    }
    if (changed.has("step") && s.step != null) {
      const step = clampStep(g, s.step);
      store.set({ step, query: queryOfStep(g, step) });
    } else if (changed.has("query") && s.step != null) {
      store.set({ step: stepOfQuery(g, s.query) });
    }
  };
  follow(new Set(["step"])); // a step given at the start moves the query too
  return store.subscribe(follow);
}
