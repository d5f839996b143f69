// Which key presses the widget keeps from JupyterLab (js/keys.ts).
import { describe, expect, it } from "vitest";
import { keepsKey } from "../../js/keys";

const press = (key: string, init: KeyboardEventInit = {}, target = "DIV"): boolean => {
  const el = document.createElement(target);
  document.body.append(el);
  let kept = false;
  el.addEventListener("keydown", (e) => { kept = keepsKey(e); });
  el.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, ...init }));
  el.remove();
  return kept;
};

describe("keepsKey", () => {
  it("keeps the keys the views use", () => {
    for (const key of ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "[", "]", "PageUp", "Enter", "Escape", " "]) {
      expect(press(key), key).toBe(true);
    }
  });
  it("lets the host's shortcuts through", () => {
    expect(press("s", { ctrlKey: true })).toBe(false);
    expect(press("s", { metaKey: true })).toBe(false);
    expect(press("Enter", { shiftKey: true })).toBe(false);
    expect(press("z", { ctrlKey: true }, "INPUT")).toBe(false);
    expect(press("a")).toBe(false); // a notebook command key the widget does not use
    expect(press("Tab")).toBe(false);
  });
  it("keeps typing in the widget's own boxes", () => {
    expect(press("a", {}, "INPUT")).toBe(true);
    expect(press("3", {}, "SELECT")).toBe(true);
    expect(press("Enter", { shiftKey: true }, "INPUT")).toBe(false);
  });
});
