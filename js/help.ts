// The widget's help: a "?" button in the header that opens a short list of
// every gesture and key, so nothing has to be guessed or read in the source.
import { h, type Listeners } from "./views/common";

/** Each view's gestures, then the keys; plain words, one line each. */
export const HELP: readonly (readonly [string, readonly string[]])[] = [
  ["Head view", [
    "Hover a token: only its lines.",
    "Click a token on the left: lock it as the query (click again to unlock); on the right: select that key.",
    "Shift-click tokens on the left: sum their attention (the bars and the status line show the sum).",
    "Click a coloured head number: show or hide that head. Double-click: that head alone (and the neuron view's head).",
    "Bars under the keys: the locked query's weight to each key (full width = 1, or the scale shown above them).",
    "▲ n / ▼ n: n lines go to keys above / below the visible rows; scroll to see them.",
    "mean / rollout: extra heads, the mean of the layer's heads and attention rollout up to this layer.",
    "words: merge word pieces into words. hide special: drop the first and special tokens and renormalise each row. log: weights on a log scale.",
  ]],
  ["Model view", [
    "Hover a cell: see it large, with its tokens and statistics. Click: open it in the head view. Shift-click: in the neuron view.",
    "rank: order each layer's heads by a statistic (largest first), its value above each cell.",
    "Overview (under the grid): one head's or the mean's whole attention matrix. Wheel or + / − zoom, drag pans, click opens the head view at that query (shift-click: the neuron view); find a token to jump there.",
  ]],
  ["Neuron view", [
    "Pick the head above the rows (or ← / →). Click a key's token: make it the query. Click a row: select that key.",
    "Type a query index and press Enter.",
  ]],
  ["Keys (click the widget first)", [
    "↑ / ↓: previous / next query.  [ / ] or PageUp / PageDown: previous / next layer.  ← / →: previous / next head (neuron view).",
  ]],
];

/** The "?" button and its panel (hidden until the button is pressed; Escape closes it). */
export function helpButton(L: Listeners): { button: HTMLButtonElement; panel: HTMLElement } {
  const button = h("button", "attnscope-btn attnscope-help-btn", { type: "button", "aria-label": "Help: gestures and keys", "aria-expanded": "false", "data-testid": "help-button", title: "Gestures and keys" });
  button.textContent = "?";
  const panel = h("div", "attnscope-help", { role: "region", "aria-label": "Gestures and keys", "data-testid": "help-panel" });
  panel.hidden = true;
  for (const [title, lines] of HELP) {
    const head = h("div", "attnscope-help-title");
    head.textContent = title;
    const list = h("ul");
    for (const line of lines) {
      const li = h("li");
      li.textContent = line;
      list.append(li);
    }
    panel.append(head, list);
  }
  const show = (open: boolean): void => {
    panel.hidden = !open;
    button.setAttribute("aria-expanded", open ? "true" : "false");
  };
  L.on(button, "click", () => show(panel.hidden));
  L.on<KeyboardEvent>(panel, "keydown", (e) => { if (e.key === "Escape") show(false); });
  return { button, panel };
}
