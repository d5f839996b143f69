// The page-wide budget of bytes decoded from embedded chunks (issue 40: saved widget state is
// untrusted input). Every widget of a page (a notebook's saved state, an exported page) draws
// from one ledger, so seven widgets with a 256 MB chunk each cannot take the tab past it: a
// chunk is charged its decoded size before it is inflated, and a chunk past the budget is an
// error that its view shows. Bytes are given back when their arrays are garbage collected (a
// chunk's cache evicted it, its widget closed) or when the decode failed.

/** Most bytes all embedded chunks of a page may hold decoded at once: 1.5 GiB. */
export const DECODE_BUDGET = 1.5 * 2 ** 30;

export interface DecodeLedger {
  /** Bytes held now. */
  readonly held: number;
  readonly limit: number;
  /** Charge `bytes`; throws, charging nothing, when they would pass the limit. Returns the refund. */
  charge(bytes: number): () => void;
  /** Give `bytes` back when `owner` is garbage collected. */
  holdUntilCollected(owner: object, bytes: number): void;
}

/** A ledger of at most `limit` bytes. */
export function createLedger(limit: number): DecodeLedger {
  let held = 0;
  const collected = typeof FinalizationRegistry === "function" ? new FinalizationRegistry<number>((bytes) => { held -= bytes; }) : null;
  return {
    get held() { return held; },
    limit,
    charge(bytes) {
      if (held + bytes > limit) {
        throw new Error(`the page's widgets hold ${mib(held)} of decoded data already, and its ${mib(bytes)} would pass the page's budget of ${mib(limit)}`);
      }
      held += bytes;
      let refunded = false;
      return () => { if (!refunded) { refunded = true; held -= bytes; } };
    },
    holdUntilCollected(owner, bytes) {
      collected?.register(owner, bytes);
    },
  };
}

const mib = (bytes: number): string => (bytes < 2 ** 20 ? `${bytes} bytes` : `${Math.round(bytes / 2 ** 20)} MiB`);

const PAGE_LEDGER = Symbol.for("attnscope.decode-ledger");

/**
 * The page's ledger, shared by every copy of the front end on the page (a notebook may import
 * the bundle more than once: the one-module widget.js is imported afresh per widget).
 */
export function pageLedger(): DecodeLedger {
  const g = globalThis as typeof globalThis & { [PAGE_LEDGER]?: DecodeLedger };
  g[PAGE_LEDGER] ??= createLedger(DECODE_BUDGET);
  return g[PAGE_LEDGER];
}
