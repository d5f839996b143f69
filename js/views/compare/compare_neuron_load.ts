// The comparison neuron view's chunks: both inputs' q/k and recorded weights for
// the store's layer and head, asked for once per layer and head.
import { setStatus } from "../common";
import { keysNow, type CompareNeuronView } from "./compare_neuron_state";

export function loadCompareNeuron(v: CompareNeuronView): void {
  const { data } = v.ctx;
  const { status } = v.dom;
  const k = keysNow(v);
  const want = Object.values(k);
  if (want.join() === v.loadedFor) return;
  v.loadedFor = want.join();
  v.chunks = Object.fromEntries(want.map((key) => [key, data.peek(key)]));
  if (!v.chunks[k.qkA] || !v.chunks[k.qkB]) setStatus(status, "Loading q and k of A and B…");
  data.request(want).then((got) => {
    if (v.loadedFor !== want.join()) return;
    for (const key of want) v.chunks[key] = got.get(key);
    if (!v.chunks[k.qkA]?.error && !v.chunks[k.qkB]?.error) setStatus(status, null);
    v.redraw();
  }).catch(() => undefined);
  v.redraw();
}
