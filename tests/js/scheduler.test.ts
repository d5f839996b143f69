// The draw scheduler: one draw per burst of requests, and a draw that found no
// width is tried once more on the next frame (a host's theme swap hides the
// element for an instant that no resize observer reports).
import { scheduler } from "../../js/views/common";

const tick = (): Promise<void> => new Promise((r) => queueMicrotask(r));
const frame = (): Promise<void> => new Promise((r) => requestAnimationFrame(() => r()));

describe("scheduler", () => {
  it("draws once for many requests in one task", async () => {
    let draws = 0;
    const s = scheduler(() => { draws += 1; });
    s.request(); s.request(); s.request();
    await tick();
    expect(draws).toBe(1);
  });

  it("tries a draw that found no width again on the next frame, once", async () => {
    const widths = [0, 0, 0];
    let draws = 0;
    const s = scheduler(() => { draws += 1; return (widths.shift() ?? 0) > 0; });
    s.request();
    await tick();
    expect(draws).toBe(1);
    await frame();
    await frame();
    expect(draws).toBe(2); // retried once; then it waits for a resize to be reported
    widths.splice(0, widths.length, 800);
    s.request();
    await tick();
    expect(draws).toBe(3);
  });

  it("draws on the next frame when the width is back by then", async () => {
    const widths = [0, 640];
    const drawn: boolean[] = [];
    const s = scheduler(() => { const ok = (widths.shift() ?? 0) > 0; drawn.push(ok); return ok; });
    s.request();
    await tick();
    await frame();
    await frame();
    expect(drawn).toEqual([false, true]);
  });

  it("draws nothing after cancel", async () => {
    let draws = 0;
    const s = scheduler(() => { draws += 1; return false; });
    s.request();
    s.cancel();
    await tick();
    await frame();
    expect(draws).toBe(0);
  });
});
