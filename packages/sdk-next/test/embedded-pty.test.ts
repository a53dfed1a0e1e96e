import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect, Exit, Scope } from "effect"

const temp = (prefix: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`)))

/** Whether `pid` is alive: present and neither a zombie nor dead. */
const alive = (pid: number): boolean => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = text.slice(text.lastIndexOf(")") + 2).split(" ")[0]
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

describe("Embedded OpenCode: PTYs", () => {
  it.scopedLive("creates, lists, updates and removes PTYs through the in-memory client", () =>
    Effect.gen(function* () {
      const directory = temp("instance")
      const host = yield* OpenCode.embedded({ databaseFile: path.join(temp("embedded"), "opencode.db"), directory })
      const created = yield* host.ptys.create({ command: "sleep", args: ["1000"], title: "sleeper" })
      expect(created.data).toMatchObject({ title: "sleeper", command: "sleep", args: ["1000"], cwd: directory })
      expect(created.data.id).toMatch(/^pty_/)
      expect(alive(created.data.pid)).toBe(true)

      const listed = yield* host.ptys.list()
      expect(listed.data.map((p) => p.id)).toEqual([created.data.id])
      const updated = yield* host.ptys.update({
        ptyID: created.data.id,
        size: { rows: 40, cols: 120 },
        title: "renamed"
      })
      expect(updated.data.title).toBe("renamed")
      const token = yield* host.ptys.connectToken({ ptyID: created.data.id })
      expect(token.data.expires_in).toBeGreaterThan(0)

      // The embedded host has no socket: connect is a tagged 400, not a fake stream.
      const connect = yield* host.ptys.connect({ ptyID: created.data.id }).pipe(Effect.flip)
      expect(connect).toMatchObject({ _tag: "InvalidRequestError", kind: "upgrade" })

      yield* host.ptys.remove({ ptyID: created.data.id })
      expect(alive(created.data.pid)).toBe(false)
      expect((yield* host.ptys.list()).data).toEqual([])
      const missing = yield* host.ptys.get({ ptyID: created.data.id }).pipe(Effect.flip)
      expect(missing._tag).toBe("PtyNotFoundError")
    })
  )

  it.scopedLive("a host's PTY Environment overlays the caller's values, under the forced terminal variables", () =>
    Effect.gen(function* () {
      const seen: Array<{ directory: string; cwd: string }> = []
      const directory = temp("instance")
      fs.mkdirSync(path.join(directory, "sub"))
      const host = yield* OpenCode.embedded({
        databaseFile: path.join(temp("embedded"), "opencode.db"),
        directory,
        ptyEnvironment: {
          get: (input) =>
            Effect.sync(() => {
              seen.push(input)
              return { SHARED: "host", HOST_ONLY: "host", TERM: "vt52" }
            })
        }
      })
      const created = yield* host.ptys.create({
        command: "sh",
        args: ["-c", 'echo "[$CALLER_ONLY|$SHARED|$HOST_ONLY|$TERM|$OPENCODE_TERMINAL]" > seen.txt'],
        cwd: "sub",
        env: { CALLER_ONLY: "caller", SHARED: "caller" }
      })
      expect(seen).toEqual([{ directory, cwd: path.join(directory, "sub") }])
      expect(created.data.cwd).toBe(path.join(directory, "sub"))
      // The embedded host has no WebSocket to read the terminal: the program writes what it saw.
      let exited = yield* host.ptys.get({ ptyID: created.data.id })
      while (exited.data.status !== "exited") {
        yield* Effect.sleep("20 millis")
        exited = yield* host.ptys.get({ ptyID: created.data.id })
      }
      expect(exited.data.exitCode).toBe(0)
      expect(fs.readFileSync(path.join(directory, "sub", "seen.txt"), "utf8")).toBe(
        "[caller|host|host|xterm-256color|1]\n"
      )
      yield* host.ptys.remove({ ptyID: created.data.id })
    })
  )

  it.live("closing the host kills its PTYs", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const host = yield* OpenCode.embedded({
        databaseFile: path.join(temp("embedded"), "opencode.db"),
        directory: temp("instance")
      }).pipe(Scope.extend(scope))
      const created = yield* host.ptys.create({ command: "sleep", args: ["1000"] })
      expect(alive(created.data.pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(alive(created.data.pid)).toBe(false)
    })
  )
})
