// The head view's step control for a trace of a generation: play, or step
// through the generated tokens; the query moves to each in turn (js/generation.ts
// links the step and the query), over the keys it could see.
import { clampStep, queryOfStep, type Generation } from "../../generation";
import { labelElement } from "../../label_text";
import type { Side } from "../../tokens";
import type { AppState, Store } from "../../wire/types";
import { h, type Listeners } from "../common";
import type { TopRows } from "./head_lines";

/** Time each step is shown while playing. */
export const PLAY_MS = 700;

export interface StepControl {
  el: HTMLElement;
  /** Show the store's step (buttons, slider, caption). */
  sync: () => void;
  /** Stop playing and drop the timer. */
  stop: () => void;
}

/** A label in quotes, escaped as a JSON string and isolated in a <bdi>. */
const quoted = (label: string): (string | Node)[] => ['"', labelElement(JSON.stringify(label).slice(1, -1)), '"'];

/** Where one head looked at a step: its strongest key, and how many more keys tie with it. */
export interface LookedAt { head: number; key: number; tied?: number }

/**
 * The key `j <= query` that head `head` weighs most in row `query` of a loaded `top:` layer,
 * and how many more tie with it; null when the row is not loaded. One rule with
 * attnscope.looked_at: keys at the same byte (1/255 of the row's largest) tie, the lowest wins.
 */
export function strongestKeyTies(top: TopRows, head: number, query: number): { key: number; tied: number } | null {
  const Q = top.queries, T = top.slots, base = (head * Q + query) * T;
  if (!((top.rowmax[head * Q + query] as number) > 0)) return null;
  let best = -1, most = -1, tied = 0;
  for (let t = 0; t < T; t++) {
    const k = top.index ? (top.index[base + t] as number) : t;
    const w = Math.abs(top.weight[base + t] as number);
    if (k > query) continue;
    if (w > most) { best = k; most = w; tied = 0; }
    else if (w === most) { tied++; if (k < best) best = k; }
  }
  return best < 0 ? null : { key: best, tied };
}

/** `strongestKeyTies`' key alone. */
export const strongestKey = (top: TopRows, head: number, query: number): number | null => strongestKeyTies(top, head, query)?.key ?? null;

/** What the caption says at `step`: the query token, the token its attention chose, and where the one selected head looked. */
export function stepCaption(g: Generation, step: number | null, side: Side, looked: LookedAt | null = null): (string | Node)[] {
  if (step == null) return [`${g.count} generated`];
  const at = queryOfStep(g, step);
  const ties = looked?.tied ? `; ${looked.tied} more key${looked.tied > 1 ? "s" : ""} as strong, the lowest named` : "";
  const where = looked ? [` · head ${looked.head} looked most at `, ...quoted(side.labels[looked.key] ?? ""), ` (#${looked.key}${ties})`] : [];
  return [`step ${step + 1}/${g.count}: `, ...quoted(side.labels[at] ?? ""), " → ", ...quoted(side.labels[at + 1] ?? ""), ...where];
}

export function stepControl(
  L: Listeners, store: Store<AppState>, g: Generation, side: () => Side, lookedAt: (step: number) => LookedAt | null = () => null,
): StepControl {
  const el = h("div", "attnscope-step", { role: "group", "aria-label": "Generation steps", "data-testid": "step-control" });
  const button = (label: string, title: string, testid: string): HTMLButtonElement => {
    const b = h("button", "attnscope-btn", { type: "button", title, "aria-label": title, "data-testid": testid });
    b.textContent = label;
    el.append(b);
    return b;
  };
  const prev = button("◀", "Previous generated token", "step-prev");
  const play = button("▶", "Play the generation", "step-play");
  const next = button("▶|", "Next generated token", "step-next");
  const slider = h("input", "attnscope-step-slider", {
    type: "range", min: "0", max: String(g.count - 1), step: "1", "aria-label": "Generation step", "data-testid": "step-slider",
  });
  const all = button("all", "Show the whole sequence (no step)", "step-all");
  const caption = h("span", "attnscope-step-caption", { "data-testid": "step-caption", "aria-live": "polite" });
  el.insertBefore(slider, all);
  el.append(caption);

  let timer: ReturnType<typeof setInterval> | null = null;
  const stop = (): void => {
    if (timer) clearInterval(timer);
    timer = null;
    sync();
  };
  const go = (step: number): void => store.set({ step: clampStep(g, step) });
  const current = (): number | null => store.get().step;

  L.on(prev, "click", () => { stop(); go((current() ?? g.count) - 1); });
  L.on(next, "click", () => { stop(); go((current() ?? -1) + 1); });
  L.on(all, "click", () => { stop(); store.set({ step: null, query: null }); });
  L.on(slider, "input", () => { const to = Number(slider.value); stop(); go(to); });
  L.on(play, "click", () => {
    if (timer) { stop(); return; }
    const s = current();
    go(s == null || s >= g.count - 1 ? 0 : s + 1);
    timer = setInterval(() => {
      const now = current();
      if (now == null || now >= g.count - 1) stop();
      else go(now + 1);
    }, PLAY_MS);
    sync();
  });

  function sync(): void {
    const s = current();
    el.dataset.step = s == null ? "" : String(s);
    el.dataset.playing = timer ? "true" : "false";
    play.textContent = timer ? "❚❚" : "▶";
    const playing = timer ? "Pause" : "Play the generation";
    play.title = playing;
    play.setAttribute("aria-label", playing);
    prev.disabled = s === 0;
    next.disabled = s === g.count - 1;
    all.disabled = s == null;
    slider.value = String(s ?? 0);
    const looked = s == null ? null : lookedAt(s);
    caption.dataset.key = looked ? String(looked.key) : "";
    caption.replaceChildren(...stepCaption(g, s, side(), looked));
  }
  sync();
  return { el, sync, stop };
}
