// Whether a live kernel stands behind one widget's model, decided from its comm.
//
// A model drawn from saved widget state has no comm: @jupyter-widgets/html-manager (nbconvert,
// nbviewer, Jupyter Book, the docs site) creates none, and JupyterLab restores a reopened
// notebook's widgets from its metadata without a live Python object behind them, even when a
// kernel is running. A request sent there is never answered: anywidget's `send` drops it. So the
// binding asks this module first and answers at once ("run the cell to explore further") instead
// of waiting for a timeout that blames a busy kernel.
import type { ModelHost } from "./traits";

/** The part of an ipywidgets model (`@jupyter-widgets/base`'s WidgetModel) read here. */
interface WidgetModelLike {
  get(name: string): unknown;
  comm?: unknown;
  comm_live?: unknown;
}

/** What a binding learns: whether no kernel stands behind the model, once `ready` settles. */
export interface KernelLink {
  /** True: no comm (nothing will answer); false: a comm; null: the host does not say (ask, and time out). */
  none(): boolean | null;
  /** Settles when `none` has its answer (at once, or after the widget manager's models resolve). */
  ready: Promise<void>;
  /** Whether `ready` has settled. */
  settled(): boolean;
}

/**
 * True under a widget manager that has no kernel behind it: @jupyter-widgets/html-manager
 * (nbconvert's page, nbviewer, Jupyter Book, nbsphinx, mkdocs-jupyter) is a full widget
 * manager (it creates comms) with no `kernel`; JupyterLab's and Notebook 7's have one, and
 * hosts with their own model (marimo) create no comms this way.
 */
export function hasNoKernel(model: ModelHost): boolean {
  const manager: unknown = (model as { widget_manager?: unknown }).widget_manager;
  return typeof manager === "object" && manager !== null
    && typeof (manager as { _create_comm?: unknown })._create_comm === "function"
    && !("kernel" in manager);
}

const known = (none: boolean | null): KernelLink => ({ none: () => none, ready: Promise.resolve(), settled: () => true });

/**
 * The kernel link of `model` (anywidget's model proxy). The proxy hides the ipywidgets model and
 * its comm; ipywidgets' widget managers (JupyterLab, Notebook 7, html-manager, VS Code) keep
 * every model in `_models` (id → promise), so the one whose `_meta` is this proxy's `_meta`
 * (each model deserialises its own object) is this widget's. Where that cannot be read (Colab,
 * marimo, the exported page's own host) the answer is null: the binding asks and times out as before.
 */
export function kernelLink(model: ModelHost): KernelLink {
  if (hasNoKernel(model)) return known(true);
  const manager = (model as { widget_manager?: { _models?: unknown } }).widget_manager;
  const models = manager?._models;
  const meta = model.get("_meta");
  if (typeof models !== "object" || models === null || typeof meta !== "object" || meta === null) return known(null);
  let found: WidgetModelLike | null = null;
  let done = false;
  const ready = new Promise<void>((resolve) => {
    const finish = (): void => { done = true; resolve(); };
    for (const p of Object.values(models as Record<string, unknown>)) {
      Promise.resolve(p).then((m) => {
        if (found || typeof m !== "object" || m === null || typeof (m as WidgetModelLike).get !== "function") return;
        if ((m as WidgetModelLike).get("_meta") === meta) { found = m as WidgetModelLike; finish(); }
      }, () => undefined);
    }
    // This widget's model resolved before it rendered: its promise answers within microtasks.
    // Another model still being made may never settle, so a task later the search ends.
    setTimeout(finish, 0);
  });
  return {
    // Only an ipywidgets model (it has `comm_live`) is read: another host's model may keep its comm elsewhere.
    none: () => (found && typeof found.comm_live === "boolean" ? found.comm === undefined : null),
    ready,
    settled: () => done,
  };
}
