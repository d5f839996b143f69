// A recording 2D context for happy-dom (which has none): every call is logged.
export interface Op { name: string; args: unknown[] }
export interface RecordingContext { ops: Op[]; count(name: string): number; reset(): void }

const contexts = new WeakMap<HTMLCanvasElement, CanvasRenderingContext2D & RecordingContext>();

function makeContext(canvas: HTMLCanvasElement): CanvasRenderingContext2D & RecordingContext {
  const ops: Op[] = [];
  const target: Record<string, unknown> = {
    canvas,
    ops,
    count: (name: string) => ops.filter((o) => o.name === name).length,
    reset: () => { ops.length = 0; },
    createImageData: (w: number, h: number) => ({ width: w, height: h, data: new Uint8ClampedArray(w * h * 4) }),
    measureText: (t: string) => ({ width: t.length * 6 }),
  };
  return new Proxy(target, {
    get(t, prop: string) {
      if (prop in t) return t[prop];
      return (...args: unknown[]) => { ops.push({ name: prop, args }); };
    },
    set(t, prop: string, value) {
      t[prop] = value;
      ops.push({ name: `set:${prop}`, args: [value] });
      return true;
    },
  }) as unknown as CanvasRenderingContext2D & RecordingContext;
}

export function installCanvas(): void {
  // happy-dom lays nothing out; views draw only at a known width, so give connected elements one.
  Object.defineProperty(HTMLElement.prototype, "clientWidth", {
    configurable: true,
    get(this: HTMLElement) { return this.isConnected ? 800 : 0; },
  });
  const proto = HTMLCanvasElement.prototype as unknown as Record<string, unknown>;
  proto.getContext = function (this: HTMLCanvasElement) {
    let c = contexts.get(this);
    if (!c) { c = makeContext(this); contexts.set(this, c); }
    return c;
  };
  proto.toDataURL = () => "data:image/png;base64,AAAA";
  proto.toBlob = (cb: (b: Blob | null) => void) => { cb(new Blob(["png"], { type: "image/png" })); };
}

export function ctxOf(c: HTMLCanvasElement): RecordingContext {
  return c.getContext("2d") as unknown as RecordingContext;
}
