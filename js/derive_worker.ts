// The page's derive worker: overview tiles, the head view's `top:` rows and a head's `attn:`
// weights computed from q and k off the main thread, so the page keeps taking input while a
// long input's chunk is computed (a tile of 32768 tokens takes about a second, the head view's
// blocks of rows a few hundred milliseconds together). js/derive_off_thread.ts starts it from
// this file's bundled text (js/build.mjs) and sends each head's `qk:` chunk once; the worker
// keeps them and answers one chunk a message, a tile computed in slices so `top:` and `attn:`
// requests asked meanwhile are answered between them (js/derive_request.ts).
import { type DeriveAnswer, type DeriveRequest, deriveQueue } from "./derive_request";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<DeriveRequest>) => void) | null;
  postMessage: (a: DeriveAnswer, t?: Transferable[]) => void;
};
// Turns run as messages to itself: a tile takes about a hundred turns (one a slice), and a chain
// of setTimeout(0) is held back 4 ms a turn after the fifth; the page's requests come in between.
const turns: (() => void)[] = [];
const channel = new MessageChannel();
channel.port1.onmessage = (): void => turns.shift()?.();
const schedule = (run: () => void): void => {
  turns.push(run);
  channel.port2.postMessage(null);
};
const receive = deriveQueue((a, transfer) => scope.postMessage(a, transfer), schedule);
scope.onmessage = (e: MessageEvent<DeriveRequest>): void => receive(e.data);
