// The diverging scale of a comparison's A − B: the theme's --as-pos (A attends
// more) and --as-neg (B attends more) around the background, so it reads in
// light and dark themes alike.
import { mix, type RGB, type ThemeColors } from "../../colors";

/** The LUT entry of a signed byte (−127 .. 127): entry 128 is 0. */
export const SIGNED_ZERO = 128;

/** Colour of a difference at `t` in [−1, 1] of the largest magnitude shown (lifted like the weight scale, so faint changes show). */
export function signedColor(t: number, theme: ThemeColors): RGB {
  const a = Math.sqrt(Math.min(1, Math.abs(t)));
  return mix(theme.bg, t < 0 ? theme.neg : theme.pos, a);
}

/** 256 RGBA entries for heatmaps of signed bytes: entry `SIGNED_ZERO + v` colours v / 127. */
export function divergingLut(theme: ThemeColors): Uint8ClampedArray {
  const lut = new Uint8ClampedArray(256 * 4);
  for (let i = 0; i < 256; i++) {
    const c = signedColor(Math.max(-127, Math.min(127, i - SIGNED_ZERO)) / 127, theme);
    lut.set([c[0], c[1], c[2], 255], i * 4);
  }
  return lut;
}
