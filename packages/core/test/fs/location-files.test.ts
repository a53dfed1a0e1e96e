import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { LocationFiles } from "../../src/fs/location-files.js"

/** A real project directory (with `.gitignore` rules and a sibling `outside` folder) in a temp dir. */
const project = (files: Record<string, string | Uint8Array> = {}) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-location-files-")))
  const directory = path.join(root, "project")
  const outside = path.join(root, "outside")
  fs.mkdirSync(directory)
  fs.mkdirSync(outside)
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(directory, name)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  return { root, directory, outside }
}

const withFiles = <A, E>(
  f: (files: LocationFiles.Interface) => Effect.Effect<A, E>,
  options: LocationFiles.Options = {}
): Effect.Effect<A, E> => Effect.flatMap(LocationFiles.Service, f).pipe(Effect.provide(LocationFiles.layer(options)))

const failureTag = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.either(effect), (result) => (Either.isLeft(result) ? result.left._tag : "succeeded"))

describe("LocationFiles.read", () => {
  it.live("reads a text file whole, as UTF-8 text with its media type", () =>
    Effect.gen(function* () {
      const p = project({ "src/app.ts": "export const x = 1\n", "doc/readme.md": "# Hi ✓\n", "data.json": "{}" })
      const where = { directory: p.directory }
      const ts = yield* withFiles((files) => files.read(where, "src/app.ts"))
      expect(new TextDecoder().decode(ts.bytes)).toBe("export const x = 1\n")
      expect(ts.path).toBe("src/app.ts")
      expect(ts.binary).toBe(false)
      // `.ts` is registered as video/mp2t; a text file is never served as a binary type.
      expect(ts.mime).toBe("text/plain; charset=utf-8")
      const md = yield* withFiles((files) => files.read(where, "doc/readme.md"))
      expect(md.mime).toBe("text/markdown; charset=utf-8")
      expect(new TextDecoder().decode(md.bytes)).toBe("# Hi ✓\n")
      const json = yield* withFiles((files) => files.read(where, "./data.json"))
      expect(json.mime).toBe("application/json; charset=utf-8")
      expect(json.path).toBe("data.json")
    })
  )

  it.live("detects binary content: NUL bytes, invalid UTF-8 and binary extensions", () =>
    Effect.gen(function* () {
      const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])
      const p = project({
        "logo.png": png,
        "blob.txt": Uint8Array.from([104, 105, 0, 1, 2]),
        "latin1.txt": Uint8Array.from([0x63, 0x61, 0x66, 0xe9]),
        "archive.zip": "not really a zip"
      })
      const where = { directory: p.directory }
      const image = yield* withFiles((files) => files.read(where, "logo.png"))
      expect(image.binary).toBe(true)
      expect(image.mime).toBe("image/png")
      expect([...image.bytes]).toEqual([...png])
      const blob = yield* withFiles((files) => files.read(where, "blob.txt"))
      expect(blob.binary).toBe(true)
      expect(blob.mime).toBe("application/octet-stream")
      const latin1 = yield* withFiles((files) => files.read(where, "latin1.txt"))
      expect(latin1.binary).toBe(true)
      const zip = yield* withFiles((files) => files.read(where, "archive.zip"))
      expect(zip.binary).toBe(true)
      expect(zip.mime).toBe("application/zip")
    })
  )

  it.live("refuses a file larger than the limit without reading it; a file at the limit is read", () =>
    Effect.gen(function* () {
      const p = project({ "exact.txt": "x".repeat(16), "big.txt": "x".repeat(17) })
      const where = { directory: p.directory }
      const exact = yield* withFiles((files) => files.read(where, "exact.txt"), { maxReadBytes: 16 })
      expect(exact.bytes.length).toBe(16)
      const big = yield* withFiles((files) => Effect.flip(files.read(where, "big.txt")), { maxReadBytes: 16 })
      expect(big._tag).toBe("Core/FileTooLarge")
      if (big._tag !== "Core/FileTooLarge") return
      expect(big.size).toBe(17)
      expect(big.limit).toBe(16)
      expect(big.message).toContain("17 bytes")
    })
  )

  it.live("the default limit is 10 MiB (a sparse file one byte over it is refused)", () =>
    Effect.gen(function* () {
      const p = project()
      fs.writeFileSync(path.join(p.directory, "huge.bin"), "")
      fs.truncateSync(path.join(p.directory, "huge.bin"), 10 * 1024 * 1024 + 1)
      const tag = yield* withFiles((files) => failureTag(files.read({ directory: p.directory }, "huge.bin")))
      expect(tag).toBe("Core/FileTooLarge")
    })
  )

  it.live("a missing path, a directory and a FIFO are tagged failures", () =>
    Effect.gen(function* () {
      const p = project({ "src/app.ts": "x" })
      const where = { directory: p.directory }
      expect(yield* withFiles((files) => failureTag(files.read(where, "nope.txt")))).toBe("Core/PathNotFound")
      expect(yield* withFiles((files) => failureTag(files.read(where, "src/app.ts/more")))).toBe("Core/PathNotFound")
      expect(yield* withFiles((files) => failureTag(files.read(where, "src")))).toBe("Core/PathNotAFile")
      expect(yield* withFiles((files) => failureTag(files.read(where, ".")))).toBe("Core/PathNotAFile")
      expect(yield* withFiles((files) => failureTag(files.read(where, "src/app.ts\0.png")))).toBe("Core/PathNotFound")
      const fifo = spawnSync("mkfifo", [path.join(p.directory, "pipe")])
      if (fifo.status === 0) {
        // Never opened: opening a FIFO for reading would wait for a writer forever.
        expect(yield* withFiles((files) => failureTag(files.read(where, "pipe")))).toBe("Core/PathNotAFile")
      }
    })
  )

  it.live("confines to the Location: `..`, absolute paths and symlinks leading out are refused", () =>
    Effect.gen(function* () {
      const p = project({ "inside.txt": "in" })
      fs.writeFileSync(path.join(p.outside, "secret.txt"), "secret")
      fs.symlinkSync(path.join(p.outside, "secret.txt"), path.join(p.directory, "leak.txt"))
      fs.symlinkSync(p.outside, path.join(p.directory, "leakdir"))
      fs.symlinkSync(path.join(p.outside, "missing.txt"), path.join(p.directory, "dangling-out"))
      fs.symlinkSync(path.join(p.directory, "inside.txt"), path.join(p.directory, "alias.txt"))
      fs.symlinkSync("../project/inside.txt", path.join(p.directory, "relative-alias.txt"))
      const where = { directory: p.directory }
      for (const requested of [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        path.join(p.outside, "secret.txt"),
        "/etc/passwd",
        "leak.txt",
        "leakdir/secret.txt",
        "dangling-out",
        "../outside/missing.txt"
      ]) {
        expect(yield* withFiles((files) => failureTag(files.read(where, requested))), requested).toBe(
          "Core/PathOutsideLocation"
        )
      }
      // Symlinks that stay inside are followed; an absolute path inside is accepted.
      const alias = yield* withFiles((files) => files.read(where, "alias.txt"))
      expect(new TextDecoder().decode(alias.bytes)).toBe("in")
      const relative = yield* withFiles((files) => files.read(where, "relative-alias.txt"))
      expect(new TextDecoder().decode(relative.bytes)).toBe("in")
      const absolute = yield* withFiles((files) => files.read(where, path.join(p.directory, "inside.txt")))
      expect(absolute.path).toBe("inside.txt")
    })
  )

  it.live("a symlink loop is not found; a dangling symlink inside is not found", () =>
    Effect.gen(function* () {
      const p = project()
      fs.symlinkSync("loop-b", path.join(p.directory, "loop-a"))
      fs.symlinkSync("loop-a", path.join(p.directory, "loop-b"))
      fs.symlinkSync("nothing-here", path.join(p.directory, "dangling"))
      const where = { directory: p.directory }
      expect(yield* withFiles((files) => failureTag(files.read(where, "loop-a")))).toBe("Core/PathNotFound")
      expect(yield* withFiles((files) => failureTag(files.read(where, "dangling")))).toBe("Core/PathNotFound")
    })
  )
})

describe("LocationFiles.list", () => {
  it.live("lists direct children, directories first, each group in path order, with relative paths", () =>
    Effect.gen(function* () {
      const p = project({ "b.txt": "", "a.txt": "", "src/index.ts": "", "lib/x/y.ts": "", ".env": "" })
      const where = { directory: p.directory }
      expect(yield* withFiles((files) => files.list(where))).toEqual([
        { path: "lib", type: "directory" },
        { path: "src", type: "directory" },
        { path: ".env", type: "file" },
        { path: "a.txt", type: "file" },
        { path: "b.txt", type: "file" }
      ])
      expect(yield* withFiles((files) => files.list(where, "lib"))).toEqual([{ path: "lib/x", type: "directory" }])
      expect(yield* withFiles((files) => files.list(where, "lib/x/"))).toEqual([{ path: "lib/x/y.ts", type: "file" }])
    })
  )

  it.live(
    "respects .gitignore (nested ones too) and leaves out .git; an ignored directory named explicitly is listed",
    () =>
      Effect.gen(function* () {
        const p = project({
          ".gitignore": "node_modules/\n*.log\n",
          "node_modules/pkg/index.js": "",
          "debug.log": "",
          "keep.txt": "",
          "src/.gitignore": "generated.ts\n",
          "src/generated.ts": "",
          "src/main.ts": "",
          ".git/HEAD": "ref: refs/heads/main\n"
        })
        const where = { directory: p.directory }
        expect(yield* withFiles((files) => files.list(where))).toEqual([
          { path: "src", type: "directory" },
          { path: ".gitignore", type: "file" },
          { path: "keep.txt", type: "file" }
        ])
        expect(yield* withFiles((files) => files.list(where, "src"))).toEqual([
          { path: "src/.gitignore", type: "file" },
          { path: "src/main.ts", type: "file" }
        ])
        expect(yield* withFiles((files) => files.list(where, "node_modules"))).toEqual([
          { path: "node_modules/pkg", type: "directory" }
        ])
      })
  )

  it.live("lists symlinks inside with their target's type and leaves out those leading outside", () =>
    Effect.gen(function* () {
      const p = project({ "src/a.ts": "", "real.txt": "" })
      fs.symlinkSync(path.join(p.directory, "src"), path.join(p.directory, "src-link"))
      fs.symlinkSync(path.join(p.directory, "real.txt"), path.join(p.directory, "file-link"))
      fs.symlinkSync(p.outside, path.join(p.directory, "out-dir"))
      fs.symlinkSync(path.join(p.directory, "gone"), path.join(p.directory, "dangling"))
      const where = { directory: p.directory }
      expect(yield* withFiles((files) => files.list(where))).toEqual([
        { path: "src", type: "directory" },
        { path: "src-link", type: "directory" },
        { path: "file-link", type: "file" },
        { path: "real.txt", type: "file" }
      ])
      // Through an inside symlink, entries keep the name the request used.
      expect(yield* withFiles((files) => files.list(where, "src-link"))).toEqual([
        { path: "src-link/a.ts", type: "file" }
      ])
    })
  )

  it.live("a file, a missing path and paths outside the Location are tagged failures", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "" })
      fs.symlinkSync(p.outside, path.join(p.directory, "out-dir"))
      const where = { directory: p.directory }
      expect(yield* withFiles((files) => failureTag(files.list(where, "a.txt")))).toBe("Core/PathNotADirectory")
      expect(yield* withFiles((files) => failureTag(files.list(where, "missing")))).toBe("Core/PathNotFound")
      expect(yield* withFiles((files) => failureTag(files.list(where, "..")))).toBe("Core/PathOutsideLocation")
      expect(yield* withFiles((files) => failureTag(files.list(where, "out-dir")))).toBe("Core/PathOutsideLocation")
      expect(yield* withFiles((files) => failureTag(files.list(where, "/")))).toBe("Core/PathOutsideLocation")
    })
  )
})

describe("LocationFiles.find", () => {
  it.live("ranks matching files and directories, best first, bounded by the limit", () =>
    Effect.gen(function* () {
      const p = project({
        "src/location/locations.ts": "",
        "src/fs/location-files.ts": "",
        "test/fs/location-files.test.ts": "",
        "docs/allocation.md": "",
        "README.md": ""
      })
      const where = { directory: p.directory }
      const found = yield* withFiles((files) => files.find(where, { query: "location-files" }))
      expect(found).toEqual([
        { path: "src/fs/location-files.ts", type: "file" },
        { path: "test/fs/location-files.test.ts", type: "file" }
      ])
      const directories = yield* withFiles((files) => files.find(where, { query: "loc", type: "directory" }))
      expect(directories).toEqual([{ path: "src/location", type: "directory" }])
      const onlyFiles = yield* withFiles((files) => files.find(where, { query: "location", type: "file" }))
      expect(onlyFiles.every((entry) => entry.type === "file")).toBe(true)
      expect(onlyFiles.map((entry) => entry.path)).toContain("docs/allocation.md")
      const limited = yield* withFiles((files) => files.find(where, { query: "location", limit: 2 }))
      expect(limited).toHaveLength(2)
      // A subsequence matches too: l-f-t in order.
      const fuzzy = yield* withFiles((files) => files.find(where, { query: "lcfts", type: "file" }))
      expect(fuzzy.map((entry) => entry.path)).toContain("src/fs/location-files.ts")
      // Every term must match; matches inside the file name rank above scattered ones.
      const terms = yield* withFiles((files) => files.find(where, { query: "test files" }))
      expect(terms[0]).toEqual({ path: "test/fs/location-files.test.ts", type: "file" })
      expect(terms.map((entry) => entry.path)).not.toContain("README.md")
    })
  )

  it.live("respects .gitignore, skips .git, and leaves out symlinks leading outside", () =>
    Effect.gen(function* () {
      const p = project({
        ".gitignore": "dist/\n",
        "dist/app.js": "",
        "src/app.ts": "",
        ".git/app-config": ""
      })
      fs.writeFileSync(path.join(p.outside, "app-secret.txt"), "")
      fs.symlinkSync(path.join(p.outside, "app-secret.txt"), path.join(p.directory, "app-leak.txt"))
      fs.symlinkSync(path.join(p.directory, "src/app.ts"), path.join(p.directory, "app-alias.ts"))
      const where = { directory: p.directory }
      const found = yield* withFiles((files) => files.find(where, { query: "app" }))
      expect(found.map((entry) => entry.path).sort()).toEqual(["app-alias.ts", "src/app.ts"])
    })
  )

  it.live("walks asynchronously: other work runs between the directories of one find", () =>
    Effect.gen(function* () {
      const files: Record<string, string> = {}
      for (let index = 0; index < 600; index++) files[`d${index % 40}/e${index % 3}/f${index}.txt`] = ""
      const p = project(files)
      // Counts event-loop turns while the find runs: a walk done in one synchronous go would allow none.
      let turns = 0
      let running = true
      const spin = () => {
        turns++
        if (running) setImmediate(spin)
      }
      setImmediate(spin)
      const found = yield* withFiles((service) => service.find({ directory: p.directory }, { query: "f599" }))
      running = false
      expect(found).toEqual([{ path: "d39/e2/f599.txt", type: "file" }])
      expect(turns).toBeGreaterThan(40)
    })
  )

  it.live("an empty query lists entries shortest path first; the limit is capped; the walk is bounded", () =>
    Effect.gen(function* () {
      const files: Record<string, string> = {}
      for (let index = 0; index < 30; index++) files[`dir${index % 3}/file${index}.txt`] = ""
      const p = project(files)
      const where = { directory: p.directory }
      const first = yield* withFiles((service) => service.find(where, { query: "", limit: 3 }))
      expect(first).toEqual([
        { path: "dir0", type: "directory" },
        { path: "dir1", type: "directory" },
        { path: "dir2", type: "directory" }
      ])
      const capped = yield* withFiles((service) => service.find(where, { query: "file", limit: 500 }), {
        maxFindLimit: 5
      })
      expect(capped).toHaveLength(5)
      const bounded = yield* withFiles((service) => service.find(where, { query: "" }), { maxScanned: 4 })
      expect(bounded).toHaveLength(4)
    })
  )
})
