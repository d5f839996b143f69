// The loader's checks (js/loader/*): SHA-256 as the build computes it, and a linker that runs
// nothing whose text does not match the manifest (issue 40, item 3). Importing blob-URL modules
// needs a browser: tests/browser/test_bundle_check.py runs the real loader in chromium.
import { type CodeManifest, CodeRefused, createLinker, isUnit } from "../../js/loader/link";
import { sha256Hex, sha256Plain } from "../../js/loader/sha256";
import { unpackText } from "../../js/loader/unpack";

const plain = (text: string): string => sha256Plain(new TextEncoder().encode(text));

describe("sha256", () => {
  it("gives FIPS 180-4's digests, and SubtleCrypto's at every padding boundary", async () => {
    expect(plain("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(plain("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(globalThis.crypto?.subtle).toBeDefined(); // so sha256Hex below is SubtleCrypto's
    const texts = ["", "abc", "é → 猫 🐈", "x".repeat(55), "x".repeat(56), "x".repeat(64), "y".repeat(200_003)];
    for (const text of texts) expect(await sha256Hex(text)).toBe(plain(text));
  });
});

describe("createLinker", () => {
  const good = "export default function render() {}";
  const manifest: CodeManifest = {
    digest: "d1",
    files: { "view_head.js": { sha256: plain(good), bytes: good.length, imports: [] } },
    entries: { widget: "widget.js", page: "page.js" },
    units: { head: "view_head.js" },
  };

  it("refuses text that does not match, and creates no module from it", async () => {
    const made = vi.spyOn(URL, "createObjectURL");
    const linker = createLinker(manifest, () => [{ "view_head.js": "globalThis.x = 1; export default () => {}" }], sha256Hex);
    await expect(linker.module("view_head.js", isUnit)).rejects.toThrow(/does not match attnscope's build d1/);
    await expect(linker.module("view_head.js", isUnit)).rejects.toBeInstanceOf(CodeRefused);
    expect(made).not.toHaveBeenCalled();
    made.mockRestore();
  });

  it("says when no text was given, and when no hash can be computed", async () => {
    const none = createLinker(manifest, () => [null, {}, { "view_head.js": 3 }], sha256Hex);
    await expect(none.module("view_head.js", isUnit)).rejects.toThrow(/no code for view_head.js/);
    const blind = createLinker(manifest, () => [{ "view_head.js": good }], async () => null);
    await expect(blind.module("view_head.js", isUnit)).rejects.toThrow(/can compute no SHA-256/);
    await expect(none.module("other.js", isUnit)).rejects.toThrow(/has no module other.js/);
  });

  it("takes the first text that checks, past empty and foreign ones", async () => {
    const made = vi.spyOn(URL, "createObjectURL").mockReturnValue("blob:checked");
    const hashed: string[] = [];
    const linker = createLinker(manifest, () => [{}, { "view_head.js": "foreign" }, { "view_head.js": good }], async (t) => {
      hashed.push(t);
      return plain(t);
    });
    // happy-dom cannot import the blob: the check passed and the module was made from the good text.
    await linker.module("view_head.js", isUnit).catch(() => undefined);
    expect(hashed).toEqual(["foreign", good]);
    expect(made).toHaveBeenCalledTimes(1);
    const blob = made.mock.calls.at(0)?.at(0) as Blob;
    expect(await blob.text()).toBe(good);
    made.mockRestore();
  });
});

describe("unpackText", () => {
  async function pack(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
    const body = new Response(bytes).body as ReadableStream<Uint8Array>;
    const packed = new Uint8Array(await new Response(body.pipeThrough(new CompressionStream("deflate-raw") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)).arrayBuffer());
    let binary = "";
    for (const b of packed) binary += String.fromCharCode(b);
    return btoa(binary);
  }

  it("inflates a module's text, and stops a bomb at the module's size", async () => {
    const text = "export default () => 'é';".repeat(50);
    const size = new TextEncoder().encode(text).length;
    expect(await unpackText(await pack(new TextEncoder().encode(text)), size)).toBe(text);
    await expect(unpackText(await pack(new TextEncoder().encode(text)), size - 1)).rejects.toThrow(/inflates past/);
    // 64 MB of zeros packs to ~64 kB; refused after the first bytes past the limit, not inflated whole.
    await expect(unpackText(await pack(new Uint8Array(64 << 20)), 100_000)).rejects.toThrow(/inflates past the 100000 bytes/);
    await expect(unpackText("not base64!", 10)).rejects.toThrow();
  });

  it("lets the linker refuse what does not inflate to the build's text", async () => {
    const good = "export default 1";
    const manifest: CodeManifest = {
      digest: "d2", files: { "a.js": { sha256: plain(good), bytes: good.length, imports: [] } }, entries: { widget: "w", page: "p" }, units: {},
    };
    const zeros = await pack(new Uint8Array(10_000));
    const linker = createLinker(manifest, () => [{ "a.js": "%%%" }, { "a.js": zeros }], sha256Hex, unpackText);
    await expect(linker.module("a.js", isUnit)).rejects.toThrow(/does not match attnscope's build d2/);
  });
});
