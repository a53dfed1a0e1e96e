import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, LogLevel, Scope } from "effect"
import WebSocket from "ws"
import { PtySocket } from "../src/pty-socket.js"
import { Serve } from "../src/serve.js"
import { call, startServer, tempDir } from "./harness.js"

/*
 * PTYs over real HTTP and a real WebSocket (`ws` as the client), with real shells: create, connect,
 * type, resize, list/get, remove (and the whole process session with it), tickets, auth and origin
 * on the upgrade, and shutdown.
 */

const basic = (password: string) => `Basic ${Buffer.from(`opencode:${password}`).toString("base64")}`

const request = (url: string, method: string, body?: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method,
      headers: { ...headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })

/** A WebSocket client that accumulates the terminal's text and records the meta frames. */
interface Terminal {
  readonly ws: WebSocket
  /** Everything received as text so far. */
  text: () => string
  readonly metas: Array<{ cursor: number }>
  /** Resolves when the received text matches `pattern`, with the match. */
  waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>
  /** Resolves once `condition` holds (checked at each message). */
  waitUntil: (condition: () => boolean) => Promise<void>
  /** Resolves with the close code. */
  readonly closed: Promise<number>
}

const open = (url: string, headers: Record<string, string> = {}): Promise<Terminal> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers })
    let text = ""
    const metas: Array<{ cursor: number }> = []
    const waiters: Array<() => void> = []
    const closed = new Promise<number>((done) => ws.on("close", (code) => done(code)))
    ws.on("message", (data, isBinary) => {
      const buffer = Buffer.isBuffer(data) ? data : Buffer.concat(data as Array<Buffer>)
      if (isBinary && buffer[0] === 0) metas.push(JSON.parse(buffer.subarray(1).toString("utf8")))
      else text += buffer.toString("utf8")
      for (const waiter of waiters.splice(0)) waiter()
    })
    ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
    ws.once("error", reject)
    const waitUntil = (condition: () => boolean) =>
      new Promise<void>((done) => {
        const check = () => (condition() ? done() : waiters.push(check))
        check()
      })
    ws.once("open", () =>
      resolve({
        ws,
        text: () => text,
        metas,
        closed,
        waitUntil,
        waitFor: async (pattern) => {
          await waitUntil(() => pattern.test(text))
          return text.match(pattern)!
        }
      })
    )
  })

/** The HTTP status an upgrade is refused with (a WebSocket that opens is a test failure). */
const refusal = (url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers })
    ws.once("unexpected-response", (_req, res) => {
      let body = ""
      res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: body === "" ? undefined : JSON.parse(body) }))
    })
    ws.once("open", () => {
      ws.close()
      reject(new Error("the upgrade was accepted"))
    })
    ws.once("error", () => undefined)
  })

interface ProcStat {
  readonly pid: number
  readonly state: string
  readonly session: number
}

const stat = (pid: number): ProcStat | undefined => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return { pid, state: fields[0] ?? "", session: Number(fields[3]) }
  } catch {
    return undefined
  }
}

/** Alive: present in /proc and neither a zombie nor dead (a zombie still answers `kill(pid, 0)`). */
const alive = (pid: number): boolean => {
  const s = stat(pid)
  return s !== undefined && s.state !== "Z" && s.state !== "X"
}

/** The live processes whose session is `leader` (field 6 of /proc/PID/stat). */
const sessionMembers = (leader: number): Array<number> =>
  fs
    .readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0)
    .map(stat)
    .filter((s): s is ProcStat => s !== undefined && s.session === leader && s.state !== "Z" && s.state !== "X")
    .map((s) => s.pid)

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A bash PTY (no rc files, a plain prompt) created over HTTP. */
const createShell = (url: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const created = yield* request(
      `${url}/api/pty`,
      "POST",
      { command: "bash", args: ["--norc", "--noprofile"], env: { PS1: "$ " }, ...extra },
      headers
    )
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    return created.body.data as { id: string; pid: number; status: string; cwd: string; title: string }
  })

describe("PTYs over HTTP and WebSocket", () => {
  it.scopedLive("a PTY echoes typed input", () =>
    Effect.gen(function* () {
      const { url, directory } = yield* startServer()
      const pty = yield* createShell(url)
      expect(pty.id).toMatch(/^pty_[0-9a-f]{12}[0-9A-Za-z]{14}$/)
      expect(pty).toMatchObject({
        status: "running",
        cwd: fs.realpathSync(directory),
        title: `Terminal ${pty.id.slice(-4)}`
      })
      const term = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      term.ws.send("echo hello-$((1+2))\r")
      yield* promise(() => term.waitFor(/hello-3/))
      // The typed line is echoed as typed, and the shell's answer is the computed value.
      expect(term.text()).toContain("echo hello-$((1+2))")
      expect(term.metas).toHaveLength(1)
      term.ws.close()
    })
  )

  it.scopedLive("replays retained output to a new connection, from a cursor, and resizes", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const pty = yield* createShell(url)
      const first = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      first.ws.send("echo one-$((40+2))\r")
      yield* promise(() => first.waitFor(/one-42/))
      first.ws.close()
      yield* promise(() => first.closed)

      // A new connection replays what was retained (before its meta frame), then continues live.
      const second = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      yield* promise(() => second.waitFor(/one-42/))
      yield* promise(() => second.waitUntil(() => second.metas.length > 0))
      // The replay came before the meta frame.
      expect(second.text()).toContain("one-42")
      const cursor = second.metas[0]!.cursor
      expect(cursor).toBeGreaterThan(0)

      // Resize through update: the shell sees the new size.
      const resized = yield* request(`${url}/api/pty/${pty.id}`, "PUT", {
        title: "build",
        size: { rows: 33, cols: 101 }
      })
      expect(resized.status).toBe(200)
      expect(resized.body.data).toMatchObject({ id: pty.id, title: "build", status: "running" })
      second.ws.send("echo size-$(stty size | tr ' ' x)\r")
      yield* promise(() => second.waitFor(/size-33x101/))
      second.ws.close()

      // From the cursor: only what came after it (the resize check), not the first command's output.
      const third = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect?cursor=${cursor}`))
      yield* promise(() => third.waitFor(/size-33x101/))
      expect(third.text()).not.toContain("one-42")
      third.ws.close()
      // `-1`: no replay at all.
      const fourth = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect?cursor=-1`))
      fourth.ws.send("echo fresh-$((5*5))\r")
      yield* promise(() => fourth.waitFor(/fresh-25/))
      expect(fourth.text()).not.toContain("size-33x101")
      fourth.ws.close()

      const bad = yield* request(`${url}/api/pty/${pty.id}/connect?cursor=abc`, "GET")
      expect(bad).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError", field: "cursor" } })
    })
  )

  it.scopedLive("lists and gets PTYs in their Location, and answers 404 for others", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const a = yield* createShell(url, {}, { title: "first" })
      const b = yield* createShell(url)
      const list = yield* call(`${url}/api/pty`, "GET")
      expect(list.status).toBe(200)
      expect(list.body.data.map((p: { id: string }) => p.id)).toEqual([a.id, b.id])
      expect(list.body.location.directory).toBe(a.cwd)
      const got = yield* call(`${url}/api/pty/${a.id}`, "GET")
      expect(got.body.data).toMatchObject({ id: a.id, title: "first", command: "bash", pid: a.pid })

      // Another Location does not see them.
      const other = tempDir("other")
      const elsewhere = yield* call(`${url}/api/pty?location[directory]=${encodeURIComponent(other)}`, "GET")
      expect(elsewhere.body.data).toEqual([])
      const hidden = yield* call(`${url}/api/pty/${a.id}?location[directory]=${encodeURIComponent(other)}`, "GET")
      expect(hidden).toMatchObject({ status: 404, body: { _tag: "PtyNotFoundError", ptyID: a.id } })

      const missing = "pty_0000000000000000000000000A"
      for (const [method, path, body] of [
        ["GET", `/api/pty/${missing}`, undefined],
        ["PUT", `/api/pty/${missing}`, { title: "x" }],
        ["DELETE", `/api/pty/${missing}`, undefined],
        ["POST", `/api/pty/${missing}/connect-token`, undefined],
        ["GET", `/api/pty/${missing}/connect`, undefined]
      ] as const) {
        const answer = yield* call(`${url}${path}`, method, body)
        expect(answer, `${method} ${path}`).toMatchObject({ status: 404, body: { _tag: "PtyNotFoundError" } })
      }
      const badId = yield* call(`${url}/api/pty/nope`, "GET")
      expect(badId).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError" } })
      const badSize = yield* call(`${url}/api/pty/${a.id}`, "PUT", { size: { rows: 0, cols: 10 } })
      expect(badSize).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError" } })
      const badCwd = yield* call(`${url}/api/pty`, "POST", { cwd: "does/not/exist" })
      expect(badCwd).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError", field: "cwd" } })
      const badCommand = yield* call(`${url}/api/pty`, "POST", { command: "no-such-program-here" })
      expect(badCommand).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError", field: "command" } })
      const unknownField = yield* call(`${url}/api/pty`, "POST", { shell: "bash" })
      expect(unknownField).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError" } })
      // A plain GET (no upgrade) to connect is a tagged 400.
      const plain = yield* call(`${url}/api/pty/${a.id}/connect`, "GET")
      expect(plain).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError", kind: "upgrade" } })
    })
  )

  it.scopedLive("the PTY environment: the caller's values, then forced TERM and OPENCODE_TERMINAL", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const pty = yield* createShell(
        url,
        {},
        { env: { PS1: "$ ", PTY_TEST_VALUE: "from-caller", TERM: "dumb", OPENCODE_TERMINAL: "0" } }
      )
      const term = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      term.ws.send('echo "v=$PTY_TEST_VALUE t=$TERM o=$OPENCODE_TERMINAL p=$PATH"\r')
      yield* promise(() => term.waitFor(/v=from-caller t=xterm-256color o=1 p=\//))
      term.ws.close()
    })
  )

  it.scopedLive("remove kills the PTY's whole session, background and setsid jobs included", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const pty = yield* createShell(url)
      const term = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      term.ws.send("sleep 1000 & echo bg-$!\r")
      const bg = Number((yield* promise(() => term.waitFor(/bg-(\d+)/)))[1])
      // The job reports its own pid: `setsid` forks when it leads a process group (a background job
      // of an interactive shell does), so `$!` would name a parent that exits at once.
      term.ws.send("setsid sh -c 'echo sid-$$; exec sleep 1001' &\r")
      const detached = Number((yield* promise(() => term.waitFor(/sid-(\d+)/)))[1])
      expect(alive(bg) && alive(detached) && alive(pty.pid)).toBe(true)
      expect(sessionMembers(pty.pid)).toEqual(expect.arrayContaining([pty.pid, bg]))

      const removed = yield* call(`${url}/api/pty/${pty.id}`, "DELETE")
      expect(removed.status).toBe(204)
      expect(yield* promise(() => term.closed)).toBe(1000)
      expect(sessionMembers(pty.pid)).toEqual([])
      expect([alive(pty.pid), alive(bg), alive(detached)]).toEqual([false, false, false])
      expect((yield* call(`${url}/api/pty/${pty.id}`, "GET")).status).toBe(404)
      expect((yield* call(`${url}/api/pty/${pty.id}`, "DELETE")).status).toBe(404)
    })
  )

  it.scopedLive("an exited PTY is kept with its exit code until removed, and its connection closes", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const pty = yield* createShell(url)
      const term = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      term.ws.send("exit 7\r")
      expect(yield* promise(() => term.closed)).toBe(1000)
      const got = yield* call(`${url}/api/pty/${pty.id}`, "GET")
      expect(got.body.data).toMatchObject({ status: "exited", exitCode: 7 })
      // A connection to an exited PTY replays its output and closes.
      const late = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      expect(yield* promise(() => late.closed)).toBe(1000)
      expect(late.text()).toContain("exit 7")
      expect((yield* call(`${url}/api/pty/${pty.id}`, "DELETE")).status).toBe(204)
    })
  )
})

describe("PTY connect authorization", () => {
  it.scopedLive("with a password: no credentials is 401, a ticket opens one connection, once", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "s3cret" })
      const auth = { authorization: basic("s3cret") }
      const pty = yield* createShell(url, auth)
      const connect = `${url}/api/pty/${pty.id}/connect`

      expect((yield* promise(() => refusal(connect))).status).toBe(401)
      expect((yield* promise(() => refusal(connect, { authorization: basic("wrong") }))).status).toBe(401)
      expect((yield* request(`${url}/api/pty/${pty.id}/connect-token`, "POST")).status).toBe(401)

      // The Authorization header works on the upgrade itself.
      const withHeader = yield* promise(() => open(connect, auth))
      withHeader.ws.close()

      const token = yield* request(`${url}/api/pty/${pty.id}/connect-token`, "POST", undefined, auth)
      expect(token.status).toBe(200)
      expect(token.body.data).toEqual({ ticket: expect.any(String), expires_in: 60 })
      const ticket = token.body.data.ticket as string
      const term = yield* promise(() => open(`${connect}?ticket=${encodeURIComponent(ticket)}`))
      term.ws.send("echo ticket-$((6*7))\r")
      yield* promise(() => term.waitFor(/ticket-42/))
      term.ws.close()

      // Spent: a second use is refused, as is a made-up ticket.
      const reused = yield* promise(() => refusal(`${connect}?ticket=${encodeURIComponent(ticket)}`))
      expect(reused).toMatchObject({ status: 403, body: { _tag: "ForbiddenError" } })
      expect((yield* promise(() => refusal(`${connect}?ticket=made-up`))).status).toBe(403)

      // A ticket is for one PTY: presented to another, it is refused (and spent).
      const other = yield* createShell(url, auth)
      const forOther = yield* request(`${url}/api/pty/${other.id}/connect-token`, "POST", undefined, auth)
      const misused = `${connect}?ticket=${encodeURIComponent(forOther.body.data.ticket)}`
      expect((yield* promise(() => refusal(misused))).status).toBe(403)
      const afterMisuse = `${url}/api/pty/${other.id}/connect?ticket=${encodeURIComponent(forOther.body.data.ticket)}`
      expect((yield* promise(() => refusal(afterMisuse))).status).toBe(403)
      // A ticket opens connect only: elsewhere it is no credential.
      const elsewhere = yield* request(`${url}/api/pty?ticket=${encodeURIComponent(ticket)}`, "GET")
      expect(elsewhere.status).toBe(401)
    })
  )

  it.scopedLive("an expired ticket is refused", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "pw" }, { ptyTickets: { lifetime: "300 millis" } })
      const auth = { authorization: basic("pw") }
      const pty = yield* createShell(url, auth)
      const token = yield* request(`${url}/api/pty/${pty.id}/connect-token`, "POST", undefined, auth)
      expect(token.body.data.expires_in).toBe(1)
      // Live time: the ticket has expired once this much has passed.
      yield* Effect.sleep("600 millis")
      const expired = yield* promise(() =>
        refusal(`${url}/api/pty/${pty.id}/connect?ticket=${encodeURIComponent(token.body.data.ticket)}`)
      )
      expect(expired).toMatchObject({ status: 403, body: { _tag: "ForbiddenError" } })
    })
  )

  it.scopedLive("an upgrade from a foreign web page is refused like any request", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const pty = yield* createShell(url)
      const foreign = yield* promise(() =>
        refusal(`${url}/api/pty/${pty.id}/connect`, { origin: "https://evil.example" })
      )
      expect(foreign).toMatchObject({ status: 403, body: { _tag: "ForbiddenOriginError" } })
      const token = yield* request(`${url}/api/pty/${pty.id}/connect-token`, "POST", undefined, {
        origin: "https://evil.example"
      })
      expect(token.status).toBe(403)
    })
  )
})

describe("PTYs at shutdown", () => {
  it.live("closing the server kills every PTY and what it started", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Serve.layer({
          port: 0,
          hostname: "127.0.0.1",
          printLogs: true,
          logLevel: LogLevel.None,
          directory: tempDir("project"),
          env: {
            XDG_DATA_HOME: tempDir("data"),
            XDG_CONFIG_HOME: tempDir("config"),
            XDG_CACHE_HOME: tempDir("cache"),
            OPENCODE_DISABLE_MODELS_FETCH: "1"
          }
        }),
        scope
      ).pipe(Effect.orDie)
      const { HttpServer } = yield* Effect.promise(() => import("@effect/platform"))
      const server = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
      if (server.address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const url = `http://127.0.0.1:${server.address.port}`
      const pty = yield* createShell(url)
      const term = yield* promise(() => open(`${url}/api/pty/${pty.id}/connect`))
      term.ws.send("nohup sleep 1002 >/dev/null 2>&1 & echo job-$!\r")
      const job = Number((yield* promise(() => term.waitFor(/job-(\d+)/)))[1])
      expect(alive(job)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect([alive(pty.pid), alive(job)]).toEqual([false, false])
      expect(sessionMembers(pty.pid)).toEqual([])
    })
  )
})

describe("PtySocket framing", () => {
  it("splits replay into 64 KiB frames without splitting a surrogate pair", () => {
    const text = `${"a".repeat(PtySocket.replayChunk - 1)}😀${"b".repeat(10)}`
    const frames = PtySocket.chunks(text)
    expect(frames.join("")).toBe(text)
    expect(frames[0]).toHaveLength(PtySocket.replayChunk - 1)
    expect(PtySocket.chunks("")).toEqual([])
  })

  it("encodes the meta frame and decodes input", () => {
    const frame = PtySocket.metaFrame(42)
    expect(frame[0]).toBe(0)
    expect(JSON.parse(Buffer.from(frame.subarray(1)).toString("utf8"))).toEqual({ cursor: 42 })
    expect(PtySocket.decodeInput("ls\r")).toBe("ls\r")
    expect(PtySocket.decodeInput(new TextEncoder().encode("é"))).toBe("é")
    expect(PtySocket.decodeInput(new Uint8Array([0xff, 0xfe]))).toBeUndefined()
  })
})
