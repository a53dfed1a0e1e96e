import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { LLMScript } from "../../../src/testing/llm-script.js"
import { world } from "../../runner/world.js"
import { call, context, failure, project, textOf } from "./harness.js"

const { reply, text, toolCall, finish } = LLMScript

const page = `<!doctype html>
<html><head><title>Docs</title><style>body { color: red }</style><script>alert("no")</script></head>
<body>
  <h1>Getting started</h1>
  <p>Install the <strong>tool</strong> with <code>npm i tool</code>, then read the <a href="/guide">guide</a>.</p>
  <ul><li>fast</li><li>small</li></ul>
  <pre><code>tool --help</code></pre>
</body></html>`

/** A loopback HTTP server for the test's scope; `routes` by path. Records every request's headers. */
const serve = (routes: Record<string, http.RequestListener>) =>
  Effect.gen(function* () {
    const seen: Array<{ path: string; headers: http.IncomingHttpHeaders }> = []
    let closed = 0
    const server = yield* Effect.acquireRelease(
      Effect.async<http.Server>((resume) => {
        const server = http.createServer((req, res) => {
          seen.push({ path: req.url ?? "/", headers: req.headers })
          req.on("close", () => void closed++)
          const route = routes[new URL(req.url ?? "/", "http://127.0.0.1").pathname]
          if (route === undefined) res.writeHead(404, { "content-type": "text/plain" }).end("no such page")
          else route(req, res)
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      seen,
      closed: () => closed
    }
  })

const html: http.RequestListener = (_req, res) =>
  void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page)

describe("webfetch", () => {
  it.scopedLive(
    "converts an HTML page to markdown (scripts and styles dropped), after asking webfetch for the URL",
    () =>
      Effect.gen(function* () {
        const site = yield* serve({ "/docs": html })
        const { ctx, asks } = context(project().directory)
        const result = yield* call("webfetch", { url: `${site.url}/docs` }, ctx)
        const markdown = textOf(result)
        expect(markdown).toContain("# Getting started")
        expect(markdown).toContain("Install the **tool** with `npm i tool`, then read the [guide](/guide).")
        expect(markdown).toMatch(/-\s+fast\n-\s+small/)
        expect(markdown).toContain("```\ntool --help\n```")
        expect(markdown).not.toContain("alert")
        expect(markdown).not.toContain("color: red")
        expect(markdown).not.toContain("<p>")
        expect(result.structured).toEqual({
          url: `${site.url}/docs`,
          contentType: "text/html; charset=utf-8",
          format: "markdown",
          output: markdown
        })
        expect(asks).toEqual([
          {
            action: "webfetch",
            resources: [`${site.url}/docs`],
            metadata: { url: `${site.url}/docs`, format: "markdown" }
          }
        ])
      })
  )

  it.scopedLive("format text gives the page's text; html gives it raw; a plain text body is returned as it is", () =>
    Effect.gen(function* () {
      const site = yield* serve({
        "/docs": html,
        "/notes.txt": (_req, res) => void res.writeHead(200, { "content-type": "text/plain" }).end("just <b>text</b>")
      })
      const { ctx } = context(project().directory)
      const plain = textOf(yield* call("webfetch", { url: `${site.url}/docs`, format: "text" }, ctx))
      expect(plain).toContain("Getting started")
      expect(plain).toContain("Install the tool with npm i tool, then read the guide.")
      expect(plain).not.toContain("**")
      expect(plain).not.toContain("<")
      expect(textOf(yield* call("webfetch", { url: `${site.url}/docs`, format: "html" }, ctx))).toBe(page)
      expect(textOf(yield* call("webfetch", { url: `${site.url}/notes.txt` }, ctx))).toBe("just <b>text</b>")
    })
  )

  it.scopedLive("a denied permission fails before any request is made", () =>
    Effect.gen(function* () {
      const site = yield* serve({ "/docs": html })
      const { ctx } = context(project().directory, () => "deny")
      const message = yield* failure(call("webfetch", { url: `${site.url}/docs` }, ctx))
      expect(message).toContain("Permission denied: webfetch")
      expect(site.seen).toEqual([])
    })
  )

  it.scopedLive("an HTTP error, a non-http URL, a binary body and an oversized body are readable failures", () =>
    Effect.gen(function* () {
      const site = yield* serve({
        "/binary": (_req, res) => void res.writeHead(200, { "content-type": "application/zip" }).end(Buffer.alloc(10)),
        "/big": (_req, res) => {
          // No content-length: the limit is enforced while reading.
          res.writeHead(200, { "content-type": "text/plain" })
          const chunk = "x".repeat(64 * 1024)
          let sent = 0
          const write = () => {
            while (sent < 200 && res.write(chunk)) sent++
            if (sent < 200) res.once("drain", write)
            else res.end()
          }
          write()
        },
        "/declared": (_req, res) =>
          void res.writeHead(200, { "content-type": "text/plain", "content-length": "2000" }).end("y".repeat(2000))
      })
      const { ctx } = context(project().directory)
      const options = { webfetch: { maxBytes: 1000 } }
      expect(yield* failure(call("webfetch", { url: `${site.url}/missing` }, ctx))).toContain(
        "failed with HTTP status 404"
      )
      expect(yield* failure(call("webfetch", { url: "file:///etc/passwd" }, ctx))).toContain(
        "Only http:// and https:// URLs"
      )
      expect(yield* failure(call("webfetch", { url: "not a url" }, ctx))).toContain("Not a URL")
      expect(yield* failure(call("webfetch", { url: `${site.url}/binary` }, ctx))).toContain(
        "application/zip is not text"
      )
      expect(yield* failure(call("webfetch", { url: `${site.url}/big` }, ctx, options))).toContain(
        "larger than the 1000-byte limit"
      )
      expect(yield* failure(call("webfetch", { url: `${site.url}/declared` }, ctx, options))).toContain(
        "2000 bytes, more than the 1000-byte limit"
      )
      // The default limit is 5 MiB: 200 × 64 KiB (12.5 MiB) is too much for it as well.
      expect(yield* failure(call("webfetch", { url: `${site.url}/big` }, ctx))).toContain(
        "larger than the 5242880-byte limit"
      )
    })
  )

  it.scopedLive("a server that never answers fails at the call's timeout, and the request is aborted", () =>
    Effect.gen(function* () {
      const site = yield* serve({ "/slow": () => {} })
      const { ctx } = context(project().directory)
      const message = yield* failure(call("webfetch", { url: `${site.url}/slow`, timeout: 1 }, ctx))
      expect(message).toContain("no complete response within 1 s")
      for (let i = 0; i < 100 && site.closed() === 0; i++) yield* Effect.sleep("20 millis")
      expect(site.closed()).toBe(1)
    })
  )

  it.scopedLive("an interrupted fetch aborts its request", () =>
    Effect.gen(function* () {
      const site = yield* serve({ "/slow": () => {} })
      const { ctx } = context(project().directory)
      const fiber = yield* Effect.fork(call("webfetch", { url: `${site.url}/slow` }, ctx))
      while (site.seen.length === 0) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      for (let i = 0; i < 100 && site.closed() === 0; i++) yield* Effect.sleep("20 millis")
      expect(site.closed()).toBe(1)
    })
  )

  it.scopedLive("in a session: the scripted model fetches a loopback page and reads it as markdown", () =>
    Effect.gen(function* () {
      const site = yield* serve({ "/docs": html })
      const w = yield* world()
      yield* w.server.enqueue(
        reply(toolCall("call_fetch", "webfetch", { url: `${site.url}/docs` }), finish("tool-calls")),
        reply(text("read it"), finish("stop"))
      )
      yield* w.prompt("read the docs page")
      yield* w.wait
      const success = (yield* w.events).find(
        (e) => e.type === "session.next.tool.success" && (e.data as any).callID === "call_fetch"
      )
      expect(success).toBeDefined()
      const toolMessage = ((yield* w.server.requests)[1]!.body.messages as Array<any>).find(
        (m) => m.role === "tool" && m.tool_call_id === "call_fetch"
      )
      expect(toolMessage.content).toContain("# Getting started")
    })
  )

  it.scopedLive("an agent whose rules deny webfetch is not offered it", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { permission: { webfetch: "deny" } } } })
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* w.prompt("hello")
      yield* w.wait
      const offered = ((yield* w.server.requests)[0]!.body.tools as Array<any>).map((t) => t.function.name)
      expect(offered).not.toContain("webfetch")
      expect(offered).toContain("read")
    })
  )
})
