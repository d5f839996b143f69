// Entry module of the self-contained exported page (imported by js/loader/page.ts): reads the embedded state and
// chunks, and mounts the same binding as the widget over an in-page model host. No network.
import { errorBox, mount } from "./bind";
import { createPageHost, type EmbeddedChunk } from "./host";
import type { Cleanup } from "./wire/types";

export interface PageOptions {
  root?: HTMLElement | string;
  state?: HTMLElement | string | Record<string, unknown>;
  chunks?: HTMLElement | string | Record<string, EmbeddedChunk>;
}

function json<T>(src: HTMLElement | string | T | undefined, fallbackId: string): T {
  const node = src === undefined ? document.getElementById(fallbackId)
    : typeof src === "string" ? document.getElementById(src)
    : src instanceof HTMLElement ? src : null;
  if (src !== undefined && typeof src === "object" && !(src instanceof HTMLElement)) return src as T;
  if (!node) throw new Error(`attnscope: #${typeof src === "string" ? src : fallbackId} is missing from the page`);
  return JSON.parse(node.textContent || "{}") as T;
}

/** Render one exported widget; several may share a page when given distinct elements. */
export function renderPage(opts: PageOptions = {}): Cleanup {
  const root = typeof opts.root === "string" ? document.getElementById(opts.root)
    : opts.root ?? document.getElementById("attnscope-root");
  if (!root) throw new Error("attnscope: no #attnscope-root element on the page");
  try {
    const state = json<Record<string, unknown>>(opts.state, "attnscope-state");
    const chunks = json<Record<string, EmbeddedChunk>>(opts.chunks, "attnscope-chunks");
    const host = createPageHost(state, chunks);
    return mount(host, root);
  } catch (e) {
    return errorBox(root, (e as Error).message);
  }
}

declare global {
  interface Window { attnscope?: { renderPage: typeof renderPage } }
}

// The page's loader (js/loader/page.ts) hands the app the way to each view's code, then draws.
export { setViewLoader } from "./view_units";

/** Draw the page's widget when the page has one (the loader calls it once the DOM is there). */
export function autoRender(): void {
  if (document.getElementById("attnscope-root") && document.getElementById("attnscope-state")) renderPage();
}

if (typeof window !== "undefined") window.attnscope = { renderPage };
