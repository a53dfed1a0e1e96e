import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Config, type ConfigInfo, ManagedOutput, ModelToolOutput, type ToolRegistry } from "@opencode-ai/core"
import { Cause, Effect, Layer, Logger, LogLevel } from "effect"
import fc from "fast-check"

const temps: Array<string> = []
const tempDir = () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-bounding-")))
  temps.push(dir)
  return dir
}
afterAll(() => temps.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })))

/** ModelToolOutput under `limits` over a managed store in a fresh `tool-output` dir. */
const setup = (
  limits: ModelToolOutput.Limits = { maxLines: 2000, maxBytes: 50 * 1024 },
  directory = path.join(tempDir(), "tool-output")
) => ({
  directory,
  layer: ModelToolOutput.layerWith(limits).pipe(
    Layer.provideMerge(ManagedOutput.layer({ directory })),
    Layer.provide(NodeContext.layer)
  )
})

const bound = (result: ToolRegistry.Result, limits?: ModelToolOutput.Limits, directory?: string) => {
  const { layer } = setup(limits, directory)
  return Effect.provide(
    Effect.flatMap(ModelToolOutput.Service, (output) => output.bound(result)),
    layer
  )
}

const text = (value: string): ToolRegistry.Result => ({ content: [{ type: "text", text: value }] })
const textOf = (result: ToolRegistry.Result) =>
  result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n")
const bytes = (value: string) => Buffer.byteLength(value, "utf8")
const numbered = (count: number, width = 0) =>
  `${Array.from({ length: count }, (_, i) => `line ${i + 1}`.padEnd(width, ".")).join("\n")}\n`
const files = (directory: string) => (fs.existsSync(directory) ? fs.readdirSync(directory) : [])
const MARKER = /\[… \d+ lines \(\d+ bytes\) truncated\.[^\n]*…\]/

/** A store whose one file is `writer` (no disk). */
const storeOf = (writer: ManagedOutput.Writer): ManagedOutput.Interface => ({
  directory: path.dirname(writer.path),
  retention: ManagedOutput.defaultRetention,
  create: Effect.succeed(writer),
  write: () => Effect.die("unused"),
  sweep: Effect.succeed(0),
  owns: () => false,
  discard: () => Effect.die("unused")
})

/** Captures the log lines (level, message, cause) of an effect. */
const captureLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const logs: Array<{ level: string; message: string; cause: Cause.Cause<unknown> }> = []
  const logger = Logger.make(({ logLevel, message, cause }) => {
    logs.push({ level: logLevel.label, message: [message].flat().map(String).join(" "), cause })
  })
  return effect.pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
    Logger.withMinimumLogLevel(LogLevel.Debug),
    Effect.map((value) => ({ value, logs }))
  )
}

describe("ModelToolOutput", () => {
  it.live(
    "Oversized textual Model Tool Output retains a bounded preview in Session history while its complete text moves to managed tool-output storage",
    () =>
      Effect.gen(function* () {
        const { directory } = setup()
        const raw = numbered(200_000) // ~2.3 MB
        const bounded = yield* bound(text(raw), undefined, directory)
        const preview = textOf(bounded)
        expect(bounded.truncated).toBe(true)
        expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
        expect(ModelToolOutput.countLines(preview)).toBeLessThanOrEqual(2000)
        expect(bounded.outputPaths).toHaveLength(1)
        // The complete text, byte for byte, in one file of the managed directory.
        expect(path.dirname(bounded.outputPaths![0]!)).toBe(directory)
        expect(fs.readFileSync(bounded.outputPaths![0]!, "utf8")).toBe(raw)
      })
  )

  it.live("small output is unchanged and creates no file", () =>
    Effect.gen(function* () {
      const { directory } = setup()
      const result = { ...text("hello\nworld\n"), structured: { ok: true } }
      const bounded = yield* bound(result, undefined, directory)
      expect(bounded).toMatchObject({
        content: result.content,
        structured: result.structured,
        truncated: false,
        lossy: false
      })
      expect(bounded.outputPaths).toBeUndefined()
      expect(files(directory)).toEqual([])
    })
  )

  describe("One tool settlement receives one aggregate textual limit, using the configured maximum lines or UTF-8 bytes, whichever is reached first", () => {
    it.live("the defaults are 2000 lines and 50 KiB from Config tool_output, and configured values are honoured", () =>
      Effect.gen(function* () {
        const make = (info: ConfigInfo.Info) =>
          Effect.provide(
            ModelToolOutput.Service,
            ModelToolOutput.layer.pipe(
              Layer.provide(ManagedOutput.layer({ directory: path.join(tempDir(), "tool-output") })),
              Layer.provide(Config.layerTest(info)),
              Layer.provide(NodeContext.layer)
            )
          )
        expect((yield* make({} as ConfigInfo.Info)).limits).toEqual({ maxLines: 2000, maxBytes: 51200 })
        const configured = yield* make({ tool_output: { max_lines: 5, max_bytes: 4096 } } as ConfigInfo.Info)
        expect(configured.limits).toEqual({ maxLines: 5, maxBytes: 4096 })
        expect((yield* configured.bound(text(numbered(5)))).truncated).toBe(false)
        expect((yield* configured.bound(text(numbered(6)))).truncated).toBe(true)
      })
    )

    it.live("lines first: many short lines under the byte limit are truncated by lines", () =>
      Effect.gen(function* () {
        const raw = numbered(3000) // ~31 KB < 50 KiB
        expect(bytes(raw)).toBeLessThan(50 * 1024)
        const bounded = yield* bound(text(raw))
        const preview = textOf(bounded)
        expect(bounded.truncated).toBe(true)
        expect(ModelToolOutput.countLines(preview)).toBeLessThanOrEqual(2000)
        expect(preview.startsWith("line 1\nline 2\n")).toBe(true)
        expect(preview.endsWith("line 2999\nline 3000\n")).toBe(true)
      })
    )

    it.live("bytes first: a few long lines over the byte limit are truncated by bytes", () =>
      Effect.gen(function* () {
        const raw = numbered(10, 10_000) // 10 lines, ~100 KB
        const bounded = yield* bound(text(raw))
        const preview = textOf(bounded)
        expect(bounded.truncated).toBe(true)
        expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
        expect(preview.startsWith("line 1...")).toBe(true)
        expect(preview.endsWith(".\n")).toBe(true)
      })
    )

    it.live("exact fit: a text of exactly the limit (lines and bytes) is not truncated; one more byte or line is", () =>
      Effect.gen(function* () {
        const { directory } = setup()
        const limits = { maxLines: 10, maxBytes: 1000 }
        // 10 lines, exactly 1000 bytes.
        const exact = Array.from({ length: 10 }, () => `${"x".repeat(99)}\n`).join("")
        expect(bytes(exact)).toBe(1000)
        const fitted = yield* bound(text(exact), limits, directory)
        expect(fitted.truncated).toBe(false)
        expect(textOf(fitted)).toBe(exact)
        expect(files(directory)).toEqual([])
        expect((yield* bound(text(`${exact}y`), limits)).truncated).toBe(true)
        expect((yield* bound(text(`${exact.slice(1)}\n`), limits)).truncated).toBe(true) // 11 lines, 1000 bytes
        // A final line without a newline counts as a line, a trailing newline does not add one.
        expect(ModelToolOutput.countLines("a\nb")).toBe(2)
        expect(ModelToolOutput.countLines("a\nb\n")).toBe(2)
        expect(ModelToolOutput.countLines("")).toBe(0)
      })
    )

    it.live("the limit is one aggregate over every text part of the result; file parts are kept", () =>
      Effect.gen(function* () {
        const { directory } = setup()
        const limits = { maxLines: 100, maxBytes: 4096 }
        const a = numbered(60)
        const b = numbered(60).toUpperCase()
        const file = { type: "file" as const, uri: "file:///tmp/image.png", mime: "image/png" }
        // Each part fits alone; together they exceed the line limit.
        const bounded = yield* bound(
          { content: [{ type: "text", text: a }, file, { type: "text", text: b }] },
          limits,
          directory
        )
        expect(bounded.truncated).toBe(true)
        expect(bounded.content).toHaveLength(2)
        expect(bounded.content[1]).toEqual(file)
        expect(fs.readFileSync(bounded.outputPaths![0]!, "utf8")).toBe(`${a}\n${b}`)
      })
    )
  })

  describe("Generic truncation preserves the beginning and end of textual output", () => {
    it.live("head and tail are kept around one marker line, cut at line boundaries", () =>
      Effect.gen(function* () {
        const raw = numbered(20_000, 60) // bytes bind before lines
        const preview = textOf(yield* bound(text(raw)))
        const [head, tail] = preview.split(MARKER)
        expect(raw.startsWith(head!)).toBe(true)
        expect(raw.endsWith(tail!.slice(1))).toBe(true)
        expect(head!.endsWith("\n")).toBe(true) // whole lines only
        expect(tail!.slice(1).startsWith("line ")).toBe(true)
        // Roughly half the budget each.
        expect(bytes(head!)).toBeGreaterThan(20_000)
        expect(bytes(tail!)).toBeGreaterThan(20_000)
        const [, lines, omitted] = /\[… (\d+) lines \((\d+) bytes\)/.exec(preview)!
        expect(Number(omitted)).toBe(bytes(raw) - bytes(head!) - bytes(tail!.slice(1)))
        expect(Number(lines)).toBe(
          20_000 - ModelToolOutput.countLines(head!) - ModelToolOutput.countLines(tail!.slice(1))
        )
      })
    )

    it.live("one huge line is cut at character boundaries rather than dropped", () =>
      Effect.gen(function* () {
        const raw = `start${"z".repeat(200_000)}end`
        const preview = textOf(yield* bound(text(raw)))
        expect(preview.startsWith("startzzz")).toBe(true)
        expect(preview.endsWith("zzzend")).toBe(true)
        expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
        expect(bytes(preview)).toBeGreaterThan(49 * 1024)
      })
    )
  })

  describe("UTF-8: a cut never splits a character", () => {
    for (const [name, char] of [
      ["2-byte", "é"],
      ["3-byte", "€"],
      ["4-byte", "😀"]
    ] as const) {
      for (const offset of [0, 1, 2, 3]) {
        it.live(`${name} characters with the cut at byte offset +${offset}`, () =>
          Effect.gen(function* () {
            // Shift the character grid against the budget so the cut lands inside a character.
            const raw = "a".repeat(offset) + char.repeat(40_000)
            const preview = textOf(yield* bound(text(raw)))
            expect(preview).not.toContain("\uFFFD")
            const [head, tail] = preview.split(MARKER)
            expect(raw.startsWith(head!.slice(0, -1))).toBe(true) // minus the separator newline
            expect(raw.endsWith(tail!.slice(1))).toBe(true)
            expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
          })
        )
      }
    }

    it("property: previews are a prefix and a suffix of whole characters, within the limit", () => {
      const alphabet = fc.constantFrom("a", "b", "é", "€", "😀", "\n", "xyz\n", "\n\n")
      fc.assert(
        fc.property(
          fc.array(alphabet, { maxLength: 1500 }),
          fc.integer({ min: 1, max: 60 }),
          fc.integer({ min: 300, max: 1500 }),
          (pieces, maxLines, maxBytes) => {
            const raw = pieces.join("")
            const window = new ModelToolOutput.Window({ maxLines, maxBytes })
            // Byte chunks of random-ish sizes, splitting characters between chunks.
            const encoded = new TextEncoder().encode(raw)
            for (let i = 0; i < encoded.length; i += 7) window.push(encoded.subarray(i, i + 7))
            const preview = window.preview((omitted) => ModelToolOutput.marker(omitted, "/data/tool-output/tool_x"))
            const fitsLimit = bytes(raw) <= maxBytes && ModelToolOutput.countLines(raw) <= maxLines
            expect(preview.truncated).toBe(!fitsLimit)
            if (fitsLimit) {
              expect(preview.text).toBe(raw)
              return
            }
            expect(preview.text).not.toContain("\uFFFD")
            expect(bytes(preview.text)).toBeLessThanOrEqual(maxBytes)
            expect(ModelToolOutput.countLines(preview.text)).toBeLessThanOrEqual(Math.max(1, maxLines))
            const [head, tail] = preview.text.split(MARKER)
            expect(raw.startsWith(head!) || raw.startsWith(head!.slice(0, -1))).toBe(true)
            expect(tail === "" || raw.endsWith(tail!.slice(1))).toBe(true)
          }
        ),
        { numRuns: 300 }
      )
    })
  })

  it.live(
    "A truncated Model Tool Output identifies its complete text both in the bounded model-visible preview and as a typed managed output path; managed output paths do not modify the tool's validated structured result",
    () =>
      Effect.gen(function* () {
        const structured = Object.freeze({ exitCode: 0, nested: Object.freeze({ lines: 100_000 }) })
        const result = { ...text(numbered(100_000)), structured }
        const bounded = yield* bound(result)
        const managed = bounded.outputPaths![0]!
        expect(textOf(bounded)).toContain(`The full output is saved to ${managed}`)
        expect(bounded.structured).toBe(structured)
        expect(structured).toEqual({ exitCode: 0, nested: { lines: 100_000 } })
        // The managed path is a plain file: ordinary reads work.
        expect(fs.statSync(managed).isFile()).toBe(true)
        expect(fs.readFileSync(managed, "utf8").split("\n")[41_999]).toBe("line 42000")
      })
  )

  describe("When a structured-only result would exceed the Model Tool Output limit, its validated structured value remains unchanged for Session consumers while model replay uses a bounded textual JSON preview and optional managed output path", () => {
    it.live(
      "oversized: the structured value is untouched; content is a bounded JSON preview; the file holds the JSON",
      () =>
        Effect.gen(function* () {
          const structured = { rows: Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `row ${i}` })) }
          const bounded = yield* bound({ content: [], structured })
          expect(bounded.structured).toBe(structured)
          expect(bounded.truncated).toBe(true)
          const preview = textOf(bounded)
          expect(preview.startsWith('{\n  "rows": [\n')).toBe(true)
          expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
          const json = fs.readFileSync(bounded.outputPaths![0]!, "utf8")
          expect(json).toBe(JSON.stringify(structured, null, 2))
          expect(JSON.parse(json)).toEqual(structured)
        })
    )

    it.live("within the limit: the model sees the whole JSON", () =>
      Effect.gen(function* () {
        const structured = { ok: true, count: 3 }
        const bounded = yield* bound({ content: [], structured })
        expect(bounded.structured).toBe(structured)
        expect(bounded.content).toEqual([{ type: "text", text: JSON.stringify(structured, null, 2) }])
        expect(bounded.outputPaths).toBeUndefined()
      })
    )
  })

  describe("Existing tool-managed output paths survive generic bounding; a fallback file retains exactly the complete projected text received by the Tool Registry", () => {
    it.live("oversized: the tool's paths come first, then the fallback file with exactly the text received", () =>
      Effect.gen(function* () {
        // A tool that already shaped its output (kept its own file) and still returned too much.
        const received = `shaped by the tool: 😀é€\n${numbered(50_000)}`
        const bounded = yield* bound({ ...text(received), outputPaths: ["/var/tool/own-output.log"] })
        expect(bounded.outputPaths).toHaveLength(2)
        expect(bounded.outputPaths![0]).toBe("/var/tool/own-output.log")
        expect(fs.readFileSync(bounded.outputPaths![1]!).equals(Buffer.from(received, "utf8"))).toBe(true)
      })
    )

    it.live("within the limit: the tool's paths are kept as they are", () =>
      Effect.gen(function* () {
        const bounded = yield* bound({ ...text("short"), outputPaths: ["/var/tool/own-output.log"] })
        expect(bounded.outputPaths).toEqual(["/var/tool/own-output.log"])
        expect(bounded.truncated).toBe(false)
      })
    )
  })

  describe("Failure to retain a Managed Tool Output File does not change a successful tool operation into a failed one", () => {
    it.live("unwritable directory: an explicitly lossy preview without a path, and a diagnostic with the cause", () =>
      Effect.gen(function* () {
        const root = tempDir()
        fs.writeFileSync(path.join(root, "not-a-directory"), "")
        const directory = path.join(root, "not-a-directory", "tool-output")
        const { value: bounded, logs } = yield* captureLogs(
          bound({ ...text(numbered(100_000)), structured: { ok: true } }, undefined, directory)
        )
        expect(bounded.truncated).toBe(true)
        expect(bounded.lossy).toBe(true)
        expect(bounded.outputPaths).toBeUndefined()
        expect(bounded.structured).toEqual({ ok: true })
        const preview = textOf(bounded)
        expect(preview).toContain("truncated. The full output could not be kept: this output is lossy")
        expect(preview).not.toContain(directory)
        expect(bytes(preview)).toBeLessThanOrEqual(50 * 1024)
        const warning = logs.find((log) => log.level === "WARN" && log.message.includes("could not be kept"))
        expect(warning).toBeDefined()
        const failure = Cause.failureOption(warning!.cause)
        expect(failure._tag).toBe("Some")
        expect((failure as any).value).toMatchObject({ _tag: "ManagedOutputWriteError", path: directory })
      })
    )

    it.effect("a write failure midway discards the partial file and degrades to lossy", () =>
      Effect.gen(function* () {
        const events: Array<string> = []
        let writes = 0
        const failing = storeOf({
          path: "/fake/tool_0",
          write: () =>
            ++writes === 3
              ? Effect.fail(new ManagedOutput.WriteError({ path: "/fake/tool_0", message: "disk full" }))
              : Effect.sync(() => void events.push("write")),
          commit: Effect.sync(() => {
            events.push("commit")
            return "/fake/tool_0"
          }),
          discard: Effect.sync(() => void events.push("discard"))
        })
        const output = ModelToolOutput.makeWith(failing, { maxLines: 2000, maxBytes: 1024 })
        const { value: preview, logs } = yield* captureLogs(
          Effect.scoped(
            Effect.gen(function* () {
              const bounder = yield* output.bounder()
              for (let i = 0; i < 10; i++) yield* bounder.write(`${"x".repeat(400_000)}\n`)
              return yield* bounder.finish
            })
          )
        )
        expect(events).toEqual(["write", "write", "discard"])
        expect(preview).toMatchObject({ truncated: true, lossy: true })
        expect(preview.path).toBeUndefined()
        expect(preview.text).toContain("could not be kept")
        expect(logs.some((log) => log.level === "WARN" && Cause.pretty(log.cause).includes("disk full"))).toBe(true)
      })
    )
  })

  describe("Streaming: bounding works with bounded memory, whatever the output size", () => {
    it.live("a Bounder fed byte chunks that split characters gives the one-shot preview and the exact file", () =>
      Effect.gen(function* () {
        const { layer, directory } = setup()
        const raw = Array.from({ length: 40_000 }, (_, i) => `${i} é€😀 ${"·".repeat(i % 50)}`).join("\n")
        const encoded = Buffer.from(raw, "utf8")
        const result = yield* Effect.provide(
          Effect.gen(function* () {
            const output = yield* ModelToolOutput.Service
            const streamed = yield* Effect.scoped(
              Effect.gen(function* () {
                const bounder = yield* output.bounder()
                for (let i = 0; i < encoded.length; i += 4093) yield* bounder.write(encoded.subarray(i, i + 4093))
                return yield* bounder.finish
              })
            )
            const whole = yield* output.boundText(raw)
            return { streamed, whole }
          }),
          layer
        )
        const strip = (preview: ModelToolOutput.Preview) => preview.text.replace(preview.path!, "<path>")
        expect(strip(result.streamed)).toBe(strip(result.whole))
        expect(result.streamed).toMatchObject({ truncated: true, lossy: false, bytes: encoded.length, lines: 40_000 })
        expect(fs.readFileSync(result.streamed.path!).equals(encoded)).toBe(true)
        expect(files(directory)).toHaveLength(2)
      })
    )

    it.live("a Bounder whose scope closes before finish leaves no partial file", () =>
      Effect.gen(function* () {
        const { layer, directory } = setup({ maxLines: 10, maxBytes: 1000 })
        yield* Effect.provide(
          Effect.scoped(
            Effect.gen(function* () {
              const bounder = yield* (yield* ModelToolOutput.Service).bounder()
              yield* bounder.write(numbered(100))
              expect(files(directory)).toHaveLength(1)
            })
          ),
          layer
        )
        expect(files(directory)).toEqual([])
      })
    )

    it.live(
      "a multi-MiB output in uneven byte chunks (CRLF, a very long line, split characters, a chunk larger than a write batch) gives the one-shot preview and the exact file",
      () =>
        Effect.gen(function* () {
          const { layer, directory } = setup()
          const raw = [
            Array.from({ length: 30_000 }, (_, i) => `${i}\tCRLF é€😀 ${"·".repeat(i % 40)}`).join("\r\n"),
            "€".repeat(1_200_000), // one very long line: 3.6 MB, no newline
            Array.from({ length: 30_000 }, (_, i) => `tail ${i} 😀`).join("\n"),
            ""
          ].join("\r\n")
          const encoded = Buffer.from(raw, "utf8")
          const sizes = [65_521, 7, 3_000_001, 1, 262_144, 100_003]
          const result = yield* Effect.provide(
            Effect.gen(function* () {
              const output = yield* ModelToolOutput.Service
              const streamed = yield* Effect.scoped(
                Effect.gen(function* () {
                  const bounder = yield* output.bounder()
                  for (let i = 0, k = 0; i < encoded.length; k++) {
                    const size = sizes[k % sizes.length]!
                    yield* bounder.write(encoded.subarray(i, i + size))
                    i += size
                  }
                  return yield* bounder.finish
                })
              )
              const whole = yield* output.boundText(raw)
              return { streamed, whole }
            }),
            layer
          )
          const strip = (preview: ModelToolOutput.Preview) => preview.text.replace(preview.path!, "<path>")
          expect(strip(result.streamed)).toBe(strip(result.whole))
          // And what a plain Window, fed everything at once (no staging), previews.
          const reference = new ModelToolOutput.Window({ maxLines: 2000, maxBytes: 50 * 1024 })
          reference.push(encoded)
          expect(strip(result.streamed)).toBe(
            reference.preview((omitted) => ModelToolOutput.marker(omitted, "<path>")).text
          )
          expect(result.streamed).toMatchObject({
            truncated: true,
            lossy: false,
            bytes: encoded.length,
            lines: ModelToolOutput.countLines(raw)
          })
          expect(result.streamed.omittedLines).toBe(result.whole.omittedLines)
          expect(result.streamed.text.endsWith("tail 29999 😀\r\n")).toBe(true)
          expect(fs.readFileSync(result.streamed.path!).equals(encoded)).toBe(true)
          expect(fs.readFileSync(result.whole.path!).equals(encoded)).toBe(true)
          expect(files(directory)).toHaveLength(2)
        })
    )

    it.effect(
      "a full write batch is under way before the Bounder takes the next chunk, so writing overlaps filling",
      () =>
        Effect.gen(function* () {
          // Each write is recorded when it starts and finishes at once.
          const started: Array<number> = []
          const recording = storeOf({
            path: "/recording/tool_0",
            write: (chunk) => Effect.sync(() => void started.push(chunk.length)),
            commit: Effect.succeed("/recording/tool_0"),
            discard: Effect.void
          })
          const output = ModelToolOutput.makeWith(recording, { maxLines: 10, maxBytes: 1024 })
          const chunk = new Uint8Array(64 * 1024).fill(0x61)
          const seen = yield* Effect.scoped(
            Effect.gen(function* () {
              const bounder = yield* output.bounder()
              const seen: Array<number> = []
              // Four 64 KiB chunks fill the first 256 KiB batch, four more the second.
              for (let i = 0; i < 8; i++) {
                yield* bounder.write(chunk)
                seen.push(started.length)
              }
              yield* bounder.finish
              return seen
            })
          )
          expect(seen).toEqual([0, 0, 0, 1, 1, 1, 1, 2])
          expect(started).toEqual([256 * 1024, 256 * 1024])
        })
    )

    it.live("a Bounder interrupted after several MiB (a write batch in flight) leaves no partial file", () =>
      Effect.gen(function* () {
        const { layer, directory } = setup()
        const chunk = Buffer.from(numbered(5000, 40))
        const exit = yield* Effect.provide(
          Effect.exit(
            Effect.scoped(
              Effect.gen(function* () {
                const bounder = yield* (yield* ModelToolOutput.Service).bounder()
                for (let fed = 0; fed < 5 * 1024 * 1024; fed += chunk.length) yield* bounder.write(chunk)
                expect(files(directory)).toHaveLength(1)
                return yield* Effect.interrupt
              })
            )
          ),
          layer
        )
        expect(exit._tag).toBe("Failure")
        expect(files(directory)).toEqual([])
      })
    )

    it("the Window holds at most about twice the byte limit, whatever it is fed", () => {
      const window = new ModelToolOutput.Window({ maxLines: 2000, maxBytes: 50 * 1024 })
      const chunk = new TextEncoder().encode(numbered(10_000))
      for (let i = 0; i < 200; i++) window.push(chunk) // ~23 MB through
      expect(window.total).toBe(chunk.length * 200)
      expect(window.retained.length).toBe(50 * 1024)
      const preview = window.preview((omitted) => ModelToolOutput.marker(omitted, "/p"))
      expect(preview.text.startsWith("line 1\n")).toBe(true)
      expect(preview.text.endsWith("line 10000\n")).toBe(true)
    })
  })

  it("clip: an oversized progress report is clipped without a file", () => {
    const clipped = ModelToolOutput.clip(
      { ...text(numbered(5000)), structured: { n: 1 } },
      { maxLines: 100, maxBytes: 4096 }
    )
    const preview = textOf(clipped)
    expect(preview).toContain("not shown in this progress report")
    expect(ModelToolOutput.countLines(preview)).toBeLessThanOrEqual(100)
    expect(clipped.structured).toEqual({ n: 1 })
    expect(clipped.outputPaths).toBeUndefined()
  })
})
