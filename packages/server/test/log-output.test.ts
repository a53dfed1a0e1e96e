import * as fs from "node:fs"
import * as path from "node:path"
import { Cause, Effect, HashMap, List, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { ServerApi } from "../src/api.js"
import { LogOutput } from "../src/log-output.js"
import { RequestLog } from "../src/middleware/request-log.js"
import { tempDir } from "./harness.js"

/** Runs `program` with the given LogOutput layer at DEBUG. */
const logWith = (options: LogOutput.Options, program: Effect.Effect<void>) =>
  Effect.runPromise(
    program.pipe(Logger.withMinimumLogLevel(LogLevel.Debug), Effect.provide(LogOutput.layer(options)), Effect.scoped)
  )

const options = (
  message: unknown,
  extra: Partial<Logger.Logger.Options<unknown>> = {}
): Logger.Logger.Options<unknown> => ({
  fiberId: { _tag: "None" } as never,
  logLevel: LogLevel.Info,
  message,
  cause: Cause.empty,
  context: undefined as never,
  spans: List.empty(),
  annotations: HashMap.empty(),
  date: new Date("2026-01-02T03:04:05.678Z"),
  ...extra
})

describe("LogOutput.entry", () => {
  it("joins the message's words, adds a logged object's keys and the annotations as fields", () => {
    const entry = LogOutput.entry(
      options(["tool ran", { tool: "bash", durationMs: 12 }], {
        annotations: HashMap.make(["sessionID", "ses_1"])
      })
    )
    expect(entry.msg).toBe("tool ran")
    expect(entry.level).toBe("INFO")
    expect(entry.fields).toEqual([
      ["tool", "bash"],
      ["durationMs", 12],
      ["sessionID", "ses_1"]
    ])
  })

  it("never writes a field named after a credential, whoever logged it", () => {
    const entry = LogOutput.entry(
      options(["calling", { apiKey: "sk-1", Authorization: "Basic eDp5", tokens: 5 }], {
        annotations: HashMap.make(["password", "hunter2"], ["ticket", "t-1"], ["token", "tok"])
      })
    )
    const line = LogOutput.logfmt(entry)
    for (const secret of ["sk-1", "eDp5", "hunter2", "t-1", "tok "]) expect(line).not.toContain(secret)
    expect(line).toContain("tokens=5")
    expect(line).toContain("apiKey=[redacted]")
  })

  it("a typed failure is one line (tag and message); a defect keeps its stack", () => {
    class Boom extends Error {
      readonly _tag = "Boom"
    }
    const failed = LogOutput.entry(options("drain stopped", { cause: Cause.fail(new Boom("no model")) }))
    expect(failed.cause).toBe("Boom: no model")
    const died = LogOutput.entry(options("crashed", { cause: Cause.die(new Error("bad state")) }))
    expect(died.cause).toContain("bad state")
    expect(died.cause).toContain("\n")
    expect(LogOutput.entry(options("gone", { cause: Cause.interrupt({ _tag: "None" } as never) })).cause).toBe(
      "interrupted"
    )
    const withError = LogOutput.entry(options(["session drain stopped", new Boom("unknown session")]))
    expect(withError.fields).toEqual([["error", "Boom: unknown session"]])
  })
})

describe("LogOutput formats", () => {
  const entry = LogOutput.entry(
    options(["request", { method: "POST", route: "/api/session/{sessionID}/prompt", note: 'a "quoted" value' }], {
      cause: Cause.fail({ _tag: "X", message: "line one\nline two" })
    })
  )

  it("logfmt: one line, plain words bare, everything else quoted with escapes", () => {
    const line = LogOutput.logfmt(entry)
    expect(line).toBe(
      'time=2026-01-02T03:04:05.678Z level=INFO msg=request method=POST route=/api/session/{sessionID}/prompt note="a \\"quoted\\" value" cause="X: line one\\nline two"'
    )
  })

  it("json: one object per line with time, level, msg and the fields", () => {
    const line = LogOutput.json(entry)
    expect(line).not.toContain("\n")
    expect(JSON.parse(line)).toEqual({
      time: "2026-01-02T03:04:05.678Z",
      level: "INFO",
      msg: "request",
      method: "POST",
      route: "/api/session/{sessionID}/prompt",
      note: 'a "quoted" value',
      cause: "X: line one\nline two"
    })
  })

  it("pretty: the level coloured only when colours are on, the cause on the lines below", () => {
    const plain = LogOutput.pretty(entry, false)
    expect(plain).not.toContain("\u001b[")
    expect(plain).toMatch(/^\d\d:\d\d:\d\d\.678 INFO {2}request method=POST /)
    expect(plain.split("\n")).toEqual([expect.any(String), "    X: line one", "    line two"])
    const coloured = LogOutput.pretty(entry, true)
    expect(coloured).toContain("\u001b[32mINFO \u001b[0m")
  })

  it("colours only on a terminal and never with NO_COLOR", () => {
    const tty = process.stderr.isTTY === true
    expect(LogOutput.colours({})).toBe(tty)
    expect(LogOutput.colours({ NO_COLOR: "1" })).toBe(false)
  })
})

describe("LogOutput file", () => {
  it("appends logfmt lines to the file, creating its directory", async () => {
    const file = path.join(tempDir("logs"), "log", "opencode.log")
    await logWith(
      { destination: { file } },
      Effect.gen(function* () {
        yield* Effect.logInfo("first", { n: 1 })
        yield* Effect.logDebug("second").pipe(Effect.annotateLogs({ sessionID: "ses_x" }))
      })
    )
    const lines = fs.readFileSync(file, "utf8").trimEnd().split("\n")
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^time=\S+ level=INFO msg=first n=1$/)
    expect(lines[1]).toMatch(/^time=\S+ level=DEBUG msg=second sessionID=ses_x$/)
  })

  it("writes JSON lines when asked", async () => {
    const file = path.join(tempDir("logs"), "opencode.log")
    await logWith({ destination: { file }, format: "json" }, Effect.logWarning("careful", { n: 2 }))
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toMatchObject({ level: "WARN", msg: "careful", n: 2 })
  })

  it("rotates by size and keeps the newest files: nothing lost within them, nothing past `keep`", async () => {
    const file = path.join(tempDir("logs"), "opencode.log")
    const rotation = { maxBytes: 300, keep: 2 }
    await logWith(
      { destination: { file }, rotation },
      Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) => Effect.logInfo("line", { i }),
        {
          discard: true
        }
      )
    )
    const dir = path.dirname(file)
    expect(fs.readdirSync(dir).sort()).toEqual(["opencode.log", "opencode.log.1", "opencode.log.2"])
    const numbers = (name: string) =>
      fs
        .readFileSync(path.join(dir, name), "utf8")
        .trimEnd()
        .split("\n")
        .map((line) => Number(/ i=(\d+)$/.exec(line)?.[1]))
    for (const name of ["opencode.log", "opencode.log.1", "opencode.log.2"]) {
      expect(fs.statSync(path.join(dir, name)).size).toBeLessThanOrEqual(rotation.maxBytes)
    }
    // Oldest to newest: .2, .1, then the live file, consecutive and ending with the last line.
    const kept = [...numbers("opencode.log.2"), ...numbers("opencode.log.1"), ...numbers("opencode.log")]
    expect(kept.at(-1)).toBe(39)
    expect(kept).toEqual(kept.map((_, k) => 39 - (kept.length - 1) + k))
    expect(kept[0]).toBeGreaterThan(0)
  })

  it("continues an existing file and counts its size towards the rotation", async () => {
    const file = path.join(tempDir("logs"), "opencode.log")
    fs.writeFileSync(file, `${"x".repeat(250)}\n`)
    await logWith({ destination: { file }, rotation: { maxBytes: 300, keep: 1 } }, Effect.logInfo("after restart"))
    expect(fs.readFileSync(`${file}.1`, "utf8")).toBe(`${"x".repeat(250)}\n`)
    expect(fs.readFileSync(file, "utf8")).toContain('msg="after restart"')
  })
})

describe("RequestLog.match", () => {
  it("finds the declared route template and its parameters, literals before parameters", () => {
    expect(RequestLog.match("POST", "/api/session/ses_1/prompt")).toEqual({
      route: "/api/session/{sessionID}/prompt",
      params: { sessionID: "ses_1" }
    })
    expect(RequestLog.match("GET", "/api/session/active")).toEqual({ route: "/api/session/active", params: {} })
    expect(RequestLog.match("GET", "/api/session/ses_2")).toEqual({
      route: "/api/session/{sessionID}",
      params: { sessionID: "ses_2" }
    })
    expect(RequestLog.match("HEAD", "/api/health")?.route).toBe("/api/health")
    expect(RequestLog.match("GET", "/api/fs/read/src/a.ts")?.route).toBe("/api/fs/read/*")
    expect(RequestLog.match("POST", "/api/session/ses_1/permission/per_2/reply")?.route).toBe(
      "/api/session/{sessionID}/permission/{requestID}/reply"
    )
  })

  it("matches nothing for an undeclared path or method", () => {
    expect(RequestLog.match("GET", "/api/nope")).toBeUndefined()
    expect(RequestLog.match("DELETE", "/api/health")).toBeUndefined()
    expect(RequestLog.match("GET", "/api/session/ses_1/prompt/extra")).toBeUndefined()
  })
})

describe("RequestLog.match over every declared operation", () => {
  // The plain definition: scan every declared template, keep the best-ranked (literal < parameter < rest,
  // segment by segment; the first declared on a tie). The middleware's indexed lookup must agree with it.
  const declared = Object.values(ServerApi.api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, path: endpoint.path as string }))
  )
  const scan = (method: string, pathname: string) => {
    const parts = pathname.split("/").filter((s) => s !== "")
    let best: { route: string; score: Array<number> } | undefined
    for (const template of declared) {
      if (!(method === "HEAD" ? ["HEAD", "GET"] : [method]).includes(template.method)) continue
      const segments = template.path.split("/").filter((s) => s !== "")
      const score: Array<number> = []
      let ok = true
      for (let i = 0; i < segments.length && ok; i++) {
        const segment = segments[i]!
        if (segment === "*") {
          score.push(2)
          break
        }
        if (parts[i] === undefined || (!segment.startsWith(":") && parts[i] !== segment)) ok = false
        else score.push(segment.startsWith(":") ? 1 : 0)
      }
      if (!ok || (segments.at(-1) !== "*" && parts.length !== segments.length)) continue
      const better = (a: Array<number>, b: Array<number>) => {
        for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!
        return a.length > b.length
      }
      if (best === undefined || better(score, best.score)) {
        best = {
          route: `/${segments.map((s) => (s.startsWith(":") ? `{${s.slice(1)}}` : s)).join("/")}`,
          score
        }
      }
    }
    return best?.route
  }

  it("finds the same route as a scan of all templates, for a path of each and some that match none", () => {
    const paths = declared.flatMap(({ method, path }) => {
      const concrete = path.replace(/:[^/]+/g, "x_1").replace("*", "a/b.ts")
      return [
        { method, path: concrete },
        { method: "HEAD", path: concrete },
        { method, path: `${concrete}/extra` },
        { method, path: concrete.split("/").slice(0, -1).join("/") || "/" }
      ]
    })
    expect(paths.length).toBeGreaterThan(100)
    for (const { method, path } of [...paths, { method: "PATCH", path: "/api/health" }, { method: "GET", path: "/" }]) {
      expect(RequestLog.match(method, path)?.route, `${method} ${path}`).toBe(scan(method, path))
    }
  })
})
