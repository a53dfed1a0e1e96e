import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { ManagedOutput } from "@opencode-ai/core"
import { Duration, Effect, Layer, TestClock } from "effect"

const temps: Array<string> = []
const tempDir = () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-managed-")))
  temps.push(dir)
  return dir
}
afterAll(() => temps.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })))

const store = (directory: string) => Effect.provide(ManagedOutput.make({ directory }), NodeContext.layer)

/** Polls (in real time, whatever the clock) until `check` holds, for up to 5 seconds. */
const eventually = (check: () => boolean) =>
  Effect.promise(async () => {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    return check()
  })

const T0 = Date.UTC(2025, 0, 1)
const DAY = 24 * 60 * 60 * 1000

describe("ManagedOutput", () => {
  it.live(
    "Managed Tool Output Files use globally unique names in one shared flat directory; their absolute paths are readable by ordinary tools",
    () =>
      Effect.gen(function* () {
        const directory = path.join(tempDir(), "data", "tool-output")
        expect(fs.existsSync(directory)).toBe(false)
        const output = yield* store(directory)
        const texts = Array.from({ length: 300 }, (_, i) => `output ${i} é😀\n`.repeat(i + 1))
        const paths = yield* Effect.forEach(texts, (text) => output.write(text), { concurrency: "unbounded" })
        // Created on demand; one flat directory of plain files, every name unique and of our pattern.
        expect(new Set(paths).size).toBe(300)
        const entries = fs.readdirSync(directory, { withFileTypes: true })
        expect(entries).toHaveLength(300)
        for (const entry of entries) {
          expect(entry.isFile()).toBe(true)
          expect(entry.name).toMatch(ManagedOutput.namePattern)
        }
        paths.forEach((file, i) => {
          expect(path.isAbsolute(file)).toBe(true)
          expect(path.dirname(file)).toBe(directory)
          expect(fs.readFileSync(file, "utf8")).toBe(texts[i])
          expect(output.owns(file)).toBe(true)
        })
        expect(output.owns("/etc/passwd")).toBe(false)
        expect(output.owns(path.join(directory, "sub", path.basename(paths[0]!)))).toBe(false)
        expect(output.owns(path.join(directory, "notes.txt"))).toBe(false)
      })
  )

  it.live("discard deletes the store's own files only, before they expire", () =>
    Effect.gen(function* () {
      const root = tempDir()
      const directory = path.join(root, "tool-output")
      const output = yield* store(directory)
      const [kept, dropped] = [yield* output.write("kept\n"), yield* output.write("dropped\n")]
      const foreign = path.join(root, "notes.txt")
      fs.writeFileSync(foreign, "user file\n")
      const lookalike = path.join(directory, "notes.txt")
      fs.writeFileSync(lookalike, "not ours\n")
      // Its own file (twice, and once more through a non-normalized path), a foreign file, a missing one.
      const missing = path.join(directory, path.basename(dropped).replace(/.$/, "0"))
      expect(
        yield* output.discard([
          dropped,
          dropped,
          path.join(directory, ".", path.basename(dropped)),
          foreign,
          lookalike,
          missing
        ])
      ).toBe(1)
      expect(fs.existsSync(dropped)).toBe(false)
      expect(fs.existsSync(kept)).toBe(true)
      expect(fs.existsSync(foreign)).toBe(true)
      expect(fs.existsSync(lookalike)).toBe(true)
    })
  )

  it.live("a writer streams chunks (text and bytes) and commits a complete file; an uncommitted one is deleted", () =>
    Effect.gen(function* () {
      const directory = path.join(tempDir(), "tool-output")
      const output = yield* store(directory)
      const committed = yield* Effect.scoped(
        Effect.gen(function* () {
          const writer = yield* output.create
          yield* writer.write("héllo ")
          yield* writer.write(new TextEncoder().encode("wörld\n"))
          yield* writer.write("x".repeat(200_000))
          return yield* writer.commit
        })
      )
      expect(fs.readFileSync(committed, "utf8")).toBe(`héllo wörld\n${"x".repeat(200_000)}`)
      expect(fs.statSync(committed).mode & 0o777).toBe(0o600)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const writer = yield* output.create
          yield* writer.write("partial")
          expect(fs.existsSync(writer.path)).toBe(true)
        })
      )
      expect(fs.readdirSync(directory)).toEqual([path.basename(committed)])
    })
  )

  it.live("write failures are typed", () =>
    Effect.gen(function* () {
      const root = tempDir()
      fs.writeFileSync(path.join(root, "file"), "")
      const directory = path.join(root, "file", "tool-output")
      const output = yield* store(directory)
      const error = yield* Effect.flip(output.write("text"))
      expect(error).toBeInstanceOf(ManagedOutput.WriteError)
      expect(error).toMatchObject({ _tag: "ManagedOutputWriteError", path: directory })
      expect(error.message).toContain(directory)
    })
  )

  it.scoped(
    "A Managed Tool Output File is temporary and may expire after its retention period: the sweep deletes only expired managed files",
    () =>
      Effect.gen(function* () {
        const directory = path.join(tempDir(), "tool-output")
        const output = yield* store(directory)
        // A missing directory is empty, and the sweep does not create it.
        expect(yield* output.sweep).toBe(0)
        expect(fs.existsSync(directory)).toBe(false)

        yield* TestClock.setTime(T0)
        const old = yield* output.write("old")
        yield* TestClock.adjust(Duration.days(6))
        const recent = yield* output.write("recent")
        // Not ours: other names, a near-miss of our pattern, and a directory with our pattern.
        const foreign = [
          "notes.txt",
          "tool_short",
          `${path.basename(old)}.txt`,
          "tool_00000000000Gabcdefghijklmn",
          "TOOL_000000000001abcdefghijklmn"
        ]
        for (const name of foreign) fs.writeFileSync(path.join(directory, name), "keep")
        const lookalike = path.join(directory, ManagedOutput.newName(0))
        fs.mkdirSync(lookalike)

        // 7 days after `old` was created: not yet expired.
        yield* TestClock.adjust(Duration.days(1))
        expect(yield* output.sweep).toBe(0)
        // One millisecond later, it is.
        yield* TestClock.adjust(Duration.millis(1))
        expect(yield* output.sweep).toBe(1)
        expect(fs.existsSync(old)).toBe(false)
        expect(fs.readFileSync(recent, "utf8")).toBe("recent")
        for (const name of foreign) expect(fs.existsSync(path.join(directory, name))).toBe(true)
        expect(fs.statSync(lookalike).isDirectory()).toBe(true)

        yield* TestClock.adjust(Duration.days(6))
        expect(yield* output.sweep).toBe(1)
        expect(fs.existsSync(recent)).toBe(false)
        expect(fs.readdirSync(directory)).toHaveLength(foreign.length + 1)
      })
  )

  it.live("the layer sweeps at startup and then periodically, on the wall clock", () =>
    Effect.gen(function* () {
      const directory = path.join(tempDir(), "tool-output")
      fs.mkdirSync(directory)
      const now = Date.now()
      const expired = path.join(directory, ManagedOutput.newName(now - 8 * DAY))
      const expiring = path.join(directory, ManagedOutput.newName(now - 7 * DAY + 3_000))
      fs.writeFileSync(expired, "")
      fs.writeFileSync(expiring, "")
      yield* Layer.build(
        ManagedOutput.layer({ directory, sweepInterval: Duration.millis(100) }).pipe(Layer.provide(NodeContext.layer))
      )
      expect(yield* eventually(() => !fs.existsSync(expired))).toBe(true)
      expect(fs.existsSync(expiring)).toBe(true)
      // A later sweep finds the other one expired, three seconds after the layer started.
      expect(yield* eventually(() => !fs.existsSync(expiring))).toBe(true)
    }).pipe(Effect.scoped)
  )

  it("names carry their creation time", () => {
    const name = ManagedOutput.newName(T0)
    expect(name).toMatch(ManagedOutput.namePattern)
    expect(ManagedOutput.createdAt(name)).toBe(T0)
    expect(ManagedOutput.createdAt("notes.txt")).toBeUndefined()
  })
})
