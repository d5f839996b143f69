// "auto" theme: follow the host. JupyterLab says it on <body data-jp-theme-light>;
// VS Code and marimo with classes; otherwise the nearest opaque background
// (crossing shadow roots), then the OS preference.
import { luminance, parseColor } from "./colors";
import type { ThemeSetting } from "./wire/types";

function parentAcrossShadow(n: Element): Element | null {
  if (n.parentElement) return n.parentElement;
  const root = n.getRootNode();
  return root instanceof ShadowRoot ? root.host : null;
}

function backgroundIsDark(el: Element): boolean | null {
  for (let n = parentAcrossShadow(el); n; n = parentAcrossShadow(n)) {
    const rgb = parseColor(getComputedStyle(n).backgroundColor || "", [-1, -1, -1]);
    if (rgb[0] < 0) continue;
    return luminance(rgb) < 0.4;
  }
  return null;
}

function hostClassTheme(): "light" | "dark" | null {
  for (const n of [document.body, document.documentElement]) {
    const c = n?.classList;
    if (!c) continue;
    if (c.contains("vscode-dark") || c.contains("vscode-high-contrast") || c.contains("dark-theme")) return "dark";
    if (c.contains("vscode-light") || c.contains("light-theme")) return "light";
  }
  return null;
}

export function resolveTheme(setting: ThemeSetting, el: HTMLElement): "light" | "dark" {
  if (setting === "light" || setting === "dark") return setting;
  const jp = document.body?.dataset.jpThemeLight;
  if (jp === "false") return "dark";
  if (jp === "true") return "light";
  const byClass = hostClassTheme();
  if (byClass) return byClass;
  const byBg = backgroundIsDark(el);
  if (byBg !== null) return byBg ? "dark" : "light";
  const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  return mq?.matches ? "dark" : "light";
}

/** Call `fn` when the host's theme may have changed; returns the cleanup. */
export function watchHostTheme(fn: () => void): () => void {
  const obs = new MutationObserver(fn);
  const attributeFilter = ["data-jp-theme-light", "data-jp-theme-name", "class", "data-theme", "style"];
  for (const n of [document.body, document.documentElement]) if (n) obs.observe(n, { attributes: true, attributeFilter });
  const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
  mq?.addEventListener?.("change", fn);
  return () => {
    obs.disconnect();
    mq?.removeEventListener?.("change", fn);
  };
}
