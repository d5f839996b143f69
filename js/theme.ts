// "auto" theme: follow JupyterLab (data-jp-theme-light), else the nearest background, else the OS.
import { luminance, parseColor } from "./colors";
import type { ThemeSetting } from "./types";

function backgroundIsDark(el: HTMLElement): boolean | null {
  for (let n: HTMLElement | null = el.parentElement; n; n = n.parentElement) {
    const bg = getComputedStyle(n).backgroundColor;
    if (!bg || bg === "transparent") continue;
    const rgb = parseColor(bg, [-1, -1, -1]);
    if (rgb[0] < 0) continue;
    return luminance(rgb) < 0.4;
  }
  return null;
}

export function resolveTheme(setting: ThemeSetting, el: HTMLElement): "light" | "dark" {
  if (setting === "light" || setting === "dark") return setting;
  const jp = document.body?.dataset.jpThemeLight;
  if (jp === "false") return "dark";
  if (jp === "true") return "light";
  const byBg = backgroundIsDark(el);
  if (byBg !== null) return byBg ? "dark" : "light";
  const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  return mq?.matches ? "dark" : "light";
}

/** Call `fn` when the host's theme may have changed; returns the cleanup. */
export function watchHostTheme(fn: () => void): () => void {
  const obs = new MutationObserver(fn);
  if (document.body) {
    obs.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });
  }
  const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  mq?.addEventListener?.("change", fn);
  return () => {
    obs.disconnect();
    mq?.removeEventListener?.("change", fn);
  };
}
