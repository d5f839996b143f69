// Small DOM/canvas helpers shared by the views (no Jupyter here).

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K, cls?: string, attrs?: Record<string, string>,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const [k, v] of Object.entries(attrs ?? {})) e.setAttribute(k, v);
  return e;
}

export interface Listeners {
  on: <E extends Event>(t: EventTarget, type: string, fn: (e: E) => void, opts?: AddEventListenerOptions) => void;
  clear: () => void;
}

/** Listener bookkeeping: every `on` is undone by `clear`. */
export function listeners(): Listeners {
  const undo: (() => void)[] = [];
  return {
    on(t, type, fn, opts) {
      const f = fn as EventListener;
      t.addEventListener(type, f, opts);
      undo.push(() => t.removeEventListener(type, f, opts));
    },
    clear() { for (const u of undo.splice(0)) u(); },
  };
}

/** Size a canvas for the device pixel ratio; returns its 2D context (null where there is none). */
export function sizeCanvas(c: HTMLCanvasElement, w: number, hgt: number, dpr = window.devicePixelRatio || 1): CanvasRenderingContext2D | null {
  const W = Math.max(1, Math.round(w * dpr));
  const H = Math.max(1, Math.round(hgt * dpr));
  if (c.width !== W) c.width = W;
  if (c.height !== H) c.height = H;
  c.style.width = `${w}px`;
  c.style.height = `${hgt}px`;
  const ctx = c.getContext("2d");
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** Mark a finished draw so tests can wait on a condition instead of sleeping. */
export function markDrawn(view: HTMLElement, ready: boolean): void {
  view.dataset.draws = String(Number(view.dataset.draws ?? "0") + 1);
  view.dataset.ready = ready ? "true" : "false";
}

/** Coalesce many redraw requests into one draw per microtask. */
export function scheduler(draw: () => void): { request: () => void; cancel: () => void } {
  let queued = false;
  let live = true;
  return {
    request() {
      if (queued || !live) return;
      queued = true;
      queueMicrotask(() => { queued = false; if (live) draw(); });
    },
    cancel() { live = false; },
  };
}

/** Set the status line: a message (loading / error / reason) or nothing. */
export function setStatus(el: HTMLElement, text: string | null, kind: "info" | "error" = "info"): void {
  el.textContent = text ?? "";
  el.hidden = !text;
  el.dataset.kind = kind;
  el.setAttribute("role", kind === "error" ? "alert" : "status");
}

/** Width available to a view (happy-dom and hidden cells report 0). */
export function widthOf(el: HTMLElement, fallback = 720): number {
  const w = el.clientWidth || el.getBoundingClientRect().width;
  return w > 0 ? w : fallback;
}

export function watchResize(el: HTMLElement, fn: () => void): () => void {
  if (typeof ResizeObserver === "undefined") return () => undefined;
  let last = -1;
  const ro = new ResizeObserver(() => {
    const w = el.clientWidth;
    if (w !== last) { last = w; fn(); }
  });
  ro.observe(el);
  return () => ro.disconnect();
}

/** A weight in at most 7 characters: below 0.001 as "3.6e-4", so it never runs into its bar. */
export function fmtWeight(v: number): string {
  return v !== 0 && Math.abs(v) < 1e-3 ? v.toExponential(1) : fmt(v, 3);
}

export function fmt(v: number, digits = 4): string {
  if (!Number.isFinite(v)) return v > 0 ? "∞" : v < 0 ? "−∞" : "NaN";
  if (v === 0) return "0";
  return Number(v.toPrecision(digits)).toString();
}
