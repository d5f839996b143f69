import { diverging, headColor, parseColor, readTheme } from "../../js/colors";

describe("colours", () => {
  it("every head gets a distinct colour, however many heads", () => {
    for (const dark of [false, true]) {
      const cs = Array.from({ length: 256 }, (_, i) => headColor(i, dark));
      expect(new Set(cs).size).toBe(256);
      for (const c of cs) expect(c).toMatch(/^#[0-9a-f]{6}$/i);
    }
  });

  it("the diverging scale is symmetric around 0 and scaled to the data", () => {
    document.body.innerHTML = '<div id="x"></div>';
    const t = readTheme(document.getElementById("x")!, false);
    expect(diverging(0, 3, t)).toBe(`rgb(${t.bg.join(",")})`);
    expect(diverging(3, 3, t)).toBe(`rgb(${t.pos.join(",")})`);
    expect(diverging(-3, 3, t)).toBe(`rgb(${t.neg.join(",")})`);
    expect(diverging(30, 3, t)).toBe(diverging(3, 3, t));
  });

  it("parses hex and rgb(a), treating transparent as missing", () => {
    expect(parseColor("#fff")).toEqual([255, 255, 255]);
    expect(parseColor(" #102030 ")).toEqual([16, 32, 48]);
    expect(parseColor("rgb(1, 2, 3)")).toEqual([1, 2, 3]);
    expect(parseColor("rgba(0, 0, 0, 0)", [9, 9, 9])).toEqual([9, 9, 9]);
  });
});
