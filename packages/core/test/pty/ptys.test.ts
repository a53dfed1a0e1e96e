import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LiveBus, Ptys } from "@opencode-ai/core"
import { Chunk, Effect, Layer, Stream } from "effect"

/** Ptys over a LiveBus of its own. */
const ptysLayer = (options: Ptys.Options = {}) =>
  Layer.fresh(Ptys.layer(options)).pipe(Layer.provideMerge(Layer.scoped(LiveBus.Service, LiveBus.make)))

const directory = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-pty-")))

describe("Ptys.environment (the PTY Environment precedence)", () => {
  it("layers the inherited environment, then the caller's values, then the host overlay, then the forced terminal", () => {
    const env = Ptys.environment({
      inherited: { A: "inherited", B: "inherited", C: "inherited", D: "inherited", TERM: "vt100", GONE: undefined },
      caller: { B: "caller", C: "caller", D: "caller", TERM: "dumb", OPENCODE_TERMINAL: "0" },
      overlay: { C: "overlay", D: "overlay", OPENCODE_TERMINAL: "overlay" }
    })
    expect(env).toEqual({
      A: "inherited",
      B: "caller",
      C: "overlay",
      D: "overlay",
      TERM: "xterm-256color",
      OPENCODE_TERMINAL: "1"
    })
  })

  it("forces TERM and OPENCODE_TERMINAL with nothing else given", () => {
    expect(Ptys.environment({ inherited: {} })).toEqual(Ptys.forced)
  })
})

/** Everything the PTY prints until its program exits. */
const outputOf = (ptys: Ptys.Interface, dir: string, id: Parameters<Ptys.Interface["get"]>[1]) =>
  Effect.scoped(
    Effect.gen(function* () {
      const attachment = yield* ptys.attach(dir, id)
      const rest = yield* Stream.runCollect(attachment.output)
      return attachment.replay + [...rest].join("")
    })
  )

describe("Ptys over real pseudo-terminals", () => {
  it.scopedLive("a program sees the caller's values under the overlay and the forced variables", () =>
    Effect.gen(function* () {
      const ptys = yield* Ptys.Service
      const dir = directory()
      const info = yield* ptys.create({
        directory: dir,
        command: "sh",
        args: ["-c", 'echo "[$FROM_CALLER|$SHARED|$TERM|$OPENCODE_TERMINAL|$(pwd)]"'],
        env: { FROM_CALLER: "caller", SHARED: "caller", TERM: "dumb" },
        overlay: { SHARED: "overlay" }
      })
      expect(info).toMatchObject({ command: "sh", cwd: dir, status: "running" })
      expect(yield* outputOf(ptys, dir, info.id)).toContain(`[caller|overlay|xterm-256color|1|${dir}]`)
      expect(yield* ptys.get(dir, info.id)).toMatchObject({ status: "exited", exitCode: 0 })
    }).pipe(Effect.provide(ptysLayer({ inherited: { PATH: process.env.PATH } })))
  )

  it.scopedLive("starts the user's shell as a login shell when no command is given", () =>
    Effect.gen(function* () {
      const ptys = yield* Ptys.Service
      const dir = directory()
      const shell = Ptys.defaultShell({ PATH: process.env.PATH, SHELL: "/bin/bash" })
      expect(shell).toBe("/bin/bash")
      const info = yield* ptys.create({ directory: dir })
      expect(info).toMatchObject({ command: "/bin/bash", args: ["-l"], cwd: dir })
      yield* ptys.remove(dir, info.id)
      expect(yield* ptys.list(dir)).toEqual([])
    }).pipe(Effect.provide(ptysLayer({ inherited: { PATH: process.env.PATH, SHELL: "/bin/bash" } })))
  )

  it.scopedLive("announces created, updated, exited and deleted on the LiveBus", () =>
    Effect.gen(function* () {
      const ptys = yield* Ptys.Service
      const bus = yield* LiveBus.Service
      const events = yield* bus.subscribe()
      const dir = directory()
      const info = yield* ptys.create({ directory: dir, command: "sh", args: ["-c", "read line; exit 3"] })
      yield* ptys.update(dir, info.id, { title: "renamed" })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const attachment = yield* ptys.attach(dir, info.id)
          attachment.write("go\r")
          yield* Stream.runDrain(attachment.output)
        })
      )
      yield* ptys.remove(dir, info.id)
      const seen = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 4)))
      expect(seen.map((e) => [e.type, e.data])).toEqual([
        ["pty.created", { info: expect.objectContaining({ id: info.id, status: "running" }) }],
        ["pty.updated", { info: expect.objectContaining({ id: info.id, title: "renamed" }) }],
        ["pty.exited", { id: info.id, exitCode: 3 }],
        ["pty.deleted", { id: info.id }]
      ])
      expect(seen.every((e) => e.id.startsWith("evt_"))).toBe(true)
    }).pipe(Effect.provide(ptysLayer()))
  )

  it("falls back to bash from PATH, then /bin/sh, when SHELL names nothing runnable", () => {
    expect(Ptys.defaultShell({ SHELL: "/nonexistent/zsh", PATH: "/usr/bin:/bin" })).toMatch(/\/bash$/)
    expect(Ptys.defaultShell({ PATH: "" })).toBe("/bin/sh")
  })

  it.live("closing the layer kills every PTY", () =>
    Effect.gen(function* () {
      const dir = directory()
      const pid = yield* Effect.scoped(
        Effect.gen(function* () {
          const ptys = yield* Ptys.Service
          const info = yield* ptys.create({ directory: dir, command: "sleep", args: ["1000"] })
          return info.pid
        }).pipe(Effect.provide(ptysLayer()))
      )
      const state = (() => {
        try {
          const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
          return text.slice(text.lastIndexOf(")") + 2).split(" ")[0]
        } catch {
          return "gone"
        }
      })()
      expect(["gone", "Z", "X"]).toContain(state)
    })
  )
})
