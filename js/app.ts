// The app shell shared by the notebook widget and the exported page: tabs,
// stream/layer/theme selectors, keyboard, and the current view.
import { bindStep } from "./generation";
import { helpButton } from "./help";
import { keepsKey } from "./keys";
import { isolate } from "./label_text";
import { THEME_LABELS, VIEW_LABELS } from "./labels";
import { offeredViews } from "./offered_views";
import { THEMES } from "./selection";
import { changedFields, clampToStream, streamShape } from "./wire/stream_change";
import { resolveTheme, watchHostTheme } from "./theme";
import { defaultQuery, querySide, streamOf } from "./tokens";
import type { AppState, Cleanup, DataSource, Meta, Store, ViewContext, ViewName } from "./wire/types";
import { h, listeners } from "./views/common";
import { comparedSide, compareToggle, comparisonSummary } from "./views/compare/compare_toggle";
import { renderSide } from "./views/compare/compare_view";
import { unitOf, viewRenderer } from "./view_units";

export interface AppOptions {
  meta: Meta;
  store: Store<AppState>;
  data: DataSource;
  /** The element the app fills (the widget's `el`, or the page's root div). */
  el: HTMLElement;
}

function viewMessage(text: string, testid: string, kind = "info"): HTMLElement {
  const box = h("div", "attnscope-status", { role: kind === "error" ? "alert" : "status", "data-kind": kind, "data-testid": testid });
  box.textContent = text;
  return box;
}

function option(sel: HTMLSelectElement, value: string, label: string): void {
  const o = h("option", "", { value });
  o.textContent = label;
  sel.append(o);
}

export function renderApp({ meta, store, data, el }: AppOptions): Cleanup {
  const L = listeners();
  // No data-lm-suppress-shortcuts: it would keep every JupyterLab shortcut (Ctrl+S, Shift+Enter)
  // from working after a click in here. The keys the widget uses stop at the root (js/keys.ts).
  const root = h("div", "attnscope", { tabindex: "0", "data-testid": "attnscope-root", "aria-label": meta.title ?? "attention" });
  L.on<KeyboardEvent>(root, "keydown", (e) => { if (keepsKey(e)) e.stopPropagation(); });
  const header = h("div", "attnscope-header");
  const title = h("span", "attnscope-title");
  title.textContent = meta.title ?? "attnscope";
  const offered = offeredViews(meta);
  const tabs = h("div", "attnscope-tabs", { role: "tablist", "aria-label": "View" });
  const tabBtns = new Map<ViewName, HTMLButtonElement>();
  for (const name of offered) {
    const b = h("button", "attnscope-tab", { type: "button", role: "tab", "data-view": name, "data-testid": `tab-${name}` });
    b.textContent = VIEW_LABELS[name];
    L.on(b, "click", () => store.set({ view: name }));
    tabBtns.set(name, b);
    tabs.append(b);
  }
  const controls = h("div", "attnscope-controls");
  const streamSel = h("select", "attnscope-select", { "aria-label": "Attention stream", "data-testid": "stream-select" });
  for (const [k, s] of Object.entries(meta.streams)) option(streamSel, k, s.label ?? k);
  const layerSel = h("select", "attnscope-select", { "aria-label": "Layer", "data-testid": "layer-select" });
  const themeSel = h("select", "attnscope-select", { "aria-label": "Theme", "data-testid": "theme-select" });
  for (const t of THEMES) option(themeSel, t, THEME_LABELS[t]);
  if (Object.keys(meta.streams).length > 1) controls.append(streamSel);
  const help = helpButton(L);
  controls.append(layerSel, themeSel, help.button);
  // One view: nothing to switch to, so no tab bar.
  header.append(...(offered.length > 1 ? [title, tabs, controls] : [title, controls]));
  // A comparison: the A / B / A − B switch after the tabs, and what is compared under them.
  const sides = meta.comparison ? compareToggle(L, store, meta) : null;
  if (sides) controls.before(sides.el);
  const notes = h("div", "attnscope-notes");
  // Each note isolated: a bidi control in one (a token it quotes, a crafted saved state)
  // cannot reorder the next, nor attnscope's own note after it.
  notes.textContent = (meta.notes ?? []).map(isolate).join(" ");
  notes.hidden = !meta.notes?.length;
  const host = h("div", "attnscope-viewhost");
  root.append(header, help.panel, ...(meta.comparison ? [comparisonSummary(meta.comparison)] : []), notes, host);
  el.append(root);

  L.on(streamSel, "change", () => store.set({ stream: streamSel.value }));
  L.on(layerSel, "change", () => store.set({ layer: Number(layerSel.value) }));
  L.on(themeSel, "change", () => store.set({ theme: themeSel.value as AppState["theme"] }));

  function fillLayers(): void {
    const sm = streamOf(meta, store.get().stream);
    layerSel.replaceChildren();
    sm.layers.forEach((num, i) => option(layerSel, String(i), `layer ${num}`));
  }

  let themeSig = "";
  function applyTheme(): void {
    const t = store.get().theme;
    const resolved = resolveTheme(t, el);
    root.dataset.theme = resolved;
    if (t === "auto") delete root.dataset.themeForced;
    else root.dataset.themeForced = t;
    // Colours also change between two dark (or two light) host themes.
    const sig = `${t}|${resolved}|${document.body?.dataset.jpThemeName ?? ""}|${getComputedStyle(root).getPropertyValue("--as-bg")}`;
    if (sig === themeSig) return;
    themeSig = sig;
    store.set({ resolved_theme: resolved, theme_rev: store.get().theme_rev + 1 });
  }

  let current: { name: ViewName; side: string | null; cleanup: Cleanup } | null = null;
  function showView(): void {
    const name = store.get().view;
    // A view this page or widget does not offer (a stale trait, a model-view click): show the first offered.
    if (!offered.includes(name)) { store.set({ view: offered[0] as ViewName }); return; }
    const side = comparedSide(meta, store.get());
    if (current?.name === name && current.side === side) return;
    current?.cleanup();
    host.replaceChildren();
    // A view's code comes in when it is first shown (js/view_units.ts); until then a line says so.
    const render = viewRenderer(unitOf(name, side));
    const ctx: ViewContext = { meta, store, data, root: host };
    if (typeof render === "function") { current = { name, side, cleanup: renderSide(name, render, ctx, side) }; return; }
    const shown = { name, side, cleanup: () => { shown.cleanup = () => {}; } };
    current = shown;
    host.append(viewMessage(`Loading the ${VIEW_LABELS[name]} view…`, "view-loading"));
    render.then(
      (r) => { if (current === shown) { host.replaceChildren(); shown.cleanup = renderSide(name, r, ctx, side); } },
      (e: Error) => { if (current === shown) host.replaceChildren(viewMessage(`attnscope: ${e.message}`, "view-failed", "error")); },
    );
  }

  function sync(): void {
    const s = store.get();
    for (const [name, b] of tabBtns) b.setAttribute("aria-selected", name === s.view ? "true" : "false");
    streamSel.value = s.stream;
    layerSel.value = String(s.layer);
    themeSel.value = s.theme;
    sides?.sync();
  }

  /** Keep the selection inside the current stream's shape: Python's rule (js/wire/stream_change.ts). */
  let keptIn = store.get().stream; // the stream the selection was last kept inside
  function clamp(): void {
    const s = store.get();
    const sm = streamOf(meta, s.stream);
    const patch: Partial<AppState> = {};
    if (!meta.streams[s.stream]) patch.stream = Object.keys(meta.streams)[0] as string;
    const old = meta.streams[keptIn] ?? sm;
    Object.assign(patch, changedFields(s, clampToStream(s, streamShape(meta, old), streamShape(meta, sm))));
    keptIn = patch.stream ?? s.stream;
    store.set(patch);
  }

  L.on<KeyboardEvent>(root, "keydown", (e) => {
    const tag = (e.target as HTMLElement).tagName;
    if (tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA" || e.altKey || e.ctrlKey || e.metaKey) return;
    const s = store.get();
    const sm = streamOf(meta, s.stream);
    const qNow = s.query ?? defaultQuery(querySide(meta, sm), sm);
    let patch: Partial<AppState> | null = null;
    switch (e.key) {
      case "ArrowDown": patch = { query: Math.min(sm.q_len - 1, s.query == null ? qNow : qNow + 1) }; break;
      case "ArrowUp": patch = { query: Math.max(0, s.query == null ? qNow : qNow - 1) }; break;
      case "]": case "PageDown": patch = { layer: Math.min(sm.layers.length - 1, s.layer + 1) }; break;
      case "[": case "PageUp": patch = { layer: Math.max(0, s.layer - 1) }; break;
      case "ArrowRight": if (s.view === "neuron") patch = { head: Math.min(sm.num_heads - 1, s.head + 1) }; break;
      case "ArrowLeft": if (s.view === "neuron") patch = { head: Math.max(0, s.head - 1) }; break;
      default: break;
    }
    if (patch) { e.preventDefault(); e.stopPropagation(); store.set(patch); }
  });

  const unsub = store.subscribe((changed) => {
    if (changed.has("stream")) { clamp(); fillLayers(); }
    if (changed.has("theme")) applyTheme();
    if (changed.has("view") || changed.has("compare_side")) showView();
    sync();
  });
  const unTheme = watchHostTheme(() => applyTheme());

  clamp();
  const unStep = bindStep(meta, store); // a generation's step moves the query (js/generation.ts)
  fillLayers();
  applyTheme();
  showView();
  sync();

  return () => {
    unsub();
    unStep();
    unTheme();
    current?.cleanup();
    current = null;
    L.clear();
    root.remove();
  };
}
