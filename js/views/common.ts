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

/**
 * Coalesce many redraw requests into one draw per microtask. A draw that returns
 * `false` could not draw (its element had no width at that instant, as while a
 * host swaps its theme's stylesheets): it is tried once more on the next frame,
 * since a resize observer never hears of a width that is back by then.
 */
export function scheduler(draw: () => unknown): { request: () => void; cancel: () => void } {
  let queued = false;
  let live = true;
  let retrying = false;
  const run = (): void => {
    queued = false;
    if (!live) return;
    if (draw() !== false) { retrying = false; return; }
    if (retrying || typeof requestAnimationFrame !== "function") return; // still hidden: watchResize draws later
    retrying = true;
    requestAnimationFrame(() => { if (live && !queued) { queued = true; run(); } });
  };
  return {
    request() {
      if (queued || !live) return;
      queued = true;
      queueMicrotask(run);
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

/**
 * Width available to a view, or 0 while it has none (a hidden or detached cell,
 * e.g. one JupyterLab took out of the page when it scrolled away). A view then
 * draws nothing: a guessed width would leave its lines short of the labels.
 * `watchResize` calls it again once the element has a width.
 */
export function widthOf(el: HTMLElement): number {
  const w = el.clientWidth || el.getBoundingClientRect().width;
  return Math.max(0, w);
}

/**
 * Call `fn` whenever `el` is resized or comes into view: a view that could not
 * draw (no width) or drew while hidden draws again at its real size.
 */
export function watchResize(el: HTMLElement, fn: () => void): () => void {
  const undo: (() => void)[] = [];
  if (typeof ResizeObserver !== "undefined") {
    const ro = new ResizeObserver(() => { if (widthOf(el) > 0) fn(); });
    ro.observe(el);
    undo.push(() => ro.disconnect());
  }
  if (typeof IntersectionObserver !== "undefined") {
    const io = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) fn(); });
    io.observe(el);
    undo.push(() => io.disconnect());
  }
  return () => { for (const u of undo.splice(0)) u(); };
}

/**
 * The one number format of every view: three significant digits ("0.279",
 * "12.3"), and below 0.01 (or from 10 000) one exponent form ("2.4e-3",
 * "9.8e-5"), so a column never mixes "0.00239" with "9.8e-5". At most 7 characters.
 */
export function fmt(v: number): string {
  if (!Number.isFinite(v)) return v > 0 ? "∞" : v < 0 ? "−∞" : "NaN";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 0.01 || a >= 1e4) return v.toExponential(1).replace("e+", "e");
  return Number(v.toPrecision(3)).toString();
}

/** A weight, in the same format as every other number. */
export const fmtWeight = fmt;
