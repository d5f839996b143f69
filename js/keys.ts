// Which key presses the widget keeps from its host. JupyterLab and Notebook 7 handle
// keys as they bubble to the document: a key the widget uses stops at its root, and
// every other one (Ctrl/Cmd shortcuts, Shift+Enter) still reaches the host.

/** Keys the views use while the widget has focus (help.ts lists the gestures). */
export const WIDGET_KEYS: ReadonlySet<string> = new Set([
  "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End",
  "[", "]", "Enter", " ", "Escape",
]);

const TYPED_IN = new Set(["INPUT", "TEXTAREA", "SELECT"]);

/** Whether a key press inside the widget stays there (true) or goes on to the host. */
export function keepsKey(e: KeyboardEvent): boolean {
  if (e.ctrlKey || e.metaKey || e.altKey) return false; // the host's shortcuts: save, undo, ...
  if (e.shiftKey && e.key === "Enter") return false; // run the cell
  const tag = (e.target as HTMLElement | null)?.tagName ?? "";
  // Typing in the widget's own boxes and menus: no letter is a notebook command there.
  return TYPED_IN.has(tag) || WIDGET_KEYS.has(e.key);
}
