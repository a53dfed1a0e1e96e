import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import * as Binary from "../binary.js"
import { startServer, tempDir } from "../harness.js"
import * as OtlpReceiver from "./otlp-receiver.js"

/** One metric family as `parse-prometheus-text-format` returns it. */
interface Family {
  readonly name: string
  readonly help: string
  readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
  readonly metrics: ReadonlyArray<{
    readonly labels?: Record<string, string>
    readonly value?: string
    readonly buckets?: Record<string, string>
    readonly count?: string
    readonly sum?: string
  }>
}
const parsePrometheus: (text: string) => ReadonlyArray<Family> = createRequire(import.meta.url)(
  "parse-prometheus-text-format"
)

const receivers: Array<OtlpReceiver.Receiver> = []
afterEach(() => {
  for (const started of receivers.splice(0)) started.close()
})

/** A loopback OTLP/HTTP receiver, closed after the test. */
const receiver = async () => {
  const started = await OtlpReceiver.start()
  receivers.push(started)
  return started
}

/** Spawns `opencode serve` in `cwd` and resolves with the URL it prints. */
const serve = (cwd: string, env: Record<string, string>) =>
  Binary.listen(["serve", "--port", "0"], { cwd, env: { XDG_DATA_HOME: tempDir("xdg"), ...env } })

const exited = Binary.exited

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, body: (await r.text()) || undefined })
  )

const { attributes } = OtlpReceiver

/** The samples of one family whose labels include `labels`. */
const series = (families: ReadonlyArray<Family>, name: string, labels: Record<string, string> = {}) =>
  (families.find((family) => family.name === name)?.metrics ?? []).filter((metric) =>
    Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value)
  )

const total = (families: ReadonlyArray<Family>, name: string, labels: Record<string, string> = {}) =>
  series(families, name, labels).reduce((sum, metric) => sum + Number(metric.value ?? metric.count ?? 0), 0)

/**
 * Every line of the exposition is a HELP or TYPE comment, or a sample `name{label="value",…} number`
 * (the parser above accepts anything, so the grammar is checked here too), and each family is declared once.
 */
const expectWellFormed = (exposition: string) => {
  expect(exposition.endsWith("\n")).toBe(true)
  const label = String.raw`[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"`
  const sample = new RegExp(
    String.raw`^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{${label}(?:,${label})*\})? (?:[+-]?Inf|NaN|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)$`
  )
  const declared = new Set<string>()
  for (const line of exposition.trimEnd().split("\n")) {
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary)$/.exec(line)
    if (type) {
      expect(declared.has(type[1]!), line).toBe(false)
      declared.add(type[1]!)
      continue
    }
    if (line.startsWith("# HELP ")) continue
    expect(line, line).toMatch(sample)
  }
}

/** One labelled histogram series read off its lines: buckets cumulative and ascending, `+Inf` equal to the count. */
const histogram = (exposition: string, name: string, labels: string) => {
  const lines = exposition.split("\n")
  const value = (line: string | undefined) => Number(line?.slice(line.lastIndexOf(" ") + 1))
  const buckets = lines
    .filter((line) => line.startsWith(`${name}_bucket{${labels},le="`))
    .map((line) => ({ le: /le="([^"]+)"/.exec(line)![1]!, count: value(line) }))
  const count = value(lines.find((line) => line.startsWith(`${name}_count{${labels}} `)))
  const sum = value(lines.find((line) => line.startsWith(`${name}_sum{${labels}} `)))
  expect(buckets.length).toBeGreaterThan(1)
  expect(buckets.at(-1)).toEqual({ le: "+Inf", count })
  for (let i = 1; i < buckets.length; i++) {
    expect(buckets[i]!.count).toBeGreaterThanOrEqual(buckets[i - 1]!.count)
    if (buckets[i]!.le !== "+Inf") expect(Number(buckets[i]!.le)).toBeGreaterThan(Number(buckets[i - 1]!.le))
  }
  return { buckets, count, sum }
}

describe("traces and metrics of a real `opencode serve`", () => {
  it("exports one session's spans over OTLP/HTTP as session → Step → provider call → tool call, and counts it in /metrics", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const llm = await Effect.runPromise(ScriptedLLMServer.make().pipe(Scope.extend(scope)))
      const collector = await receiver()
      const project = tempDir("otel-project")
      fs.writeFileSync(path.join(project, "notes.txt"), "the answer is 42\n")
      const config = tempDir("config")
      fs.mkdirSync(path.join(config, "opencode"))
      fs.writeFileSync(
        path.join(config, "opencode", "opencode.json"),
        JSON.stringify(ScriptedLLMServer.config(llm.url))
      )
      const { reply, toolCall, text, usage, finish } = LLMScript
      await Effect.runPromise(
        llm.enqueue(
          reply(
            toolCall("call_read", "read", { path: "notes.txt" }),
            usage({ input: 120, output: 8, cacheRead: 30 }),
            finish("tool-calls")
          ),
          reply(text("It says 42."), usage({ input: 160, output: 5, reasoning: 2 }), finish("stop"))
        )
      )
      await Effect.runPromise(llm.enqueueTitle(reply(text("Reading notes"), finish("stop"))))

      const { child, url } = await serve(project, {
        XDG_CONFIG_HOME: config,
        OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`,
        OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=s3cret%20token,x-tenant=t1",
        OTEL_SERVICE_NAME: "opencode-under-test"
      })
      const created = await post(`${url}/api/session`, {})
      expect(created.status).toBe(200)
      const sessionID: string = JSON.parse(created.body!).data.id
      const prompted = await post(`${url}/api/session/${sessionID}/prompt`, {
        prompt: { text: "what do my notes say?" }
      })
      expect(prompted.status).toBe(200)
      expect((await post(`${url}/api/session/${sessionID}/wait`, {})).status).toBeLessThan(300)
      expect(await Effect.runPromise(llm.remaining)).toBe(0)
      // The title request runs beside the drain (the session is idle before it ends): its title is
      // stored after its provider request was timed, so the scrape below waits for the title.
      for (let tries = 0; ; tries++) {
        const session = await fetch(`${url}/api/session/${sessionID}`)
        if ((await session.json()).data.title === "Reading notes") break
        if (tries >= 200) throw new Error("the session got no title")
        await new Promise((resolve) => setTimeout(resolve, 25))
      }

      // /metrics after the session, parsed by a Prometheus text parser.
      const scrape = await fetch(`${url}/metrics`)
      expect(scrape.status).toBe(200)
      expect(scrape.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
      const exposition = await scrape.text()
      expectWellFormed(exposition)
      const families = parsePrometheus(exposition)
      const byName = new Map(families.map((family) => [family.name, family]))
      expect(byName.get("opencode_steps_total")?.type).toBe("COUNTER")
      expect(total(families, "opencode_steps_total", { outcome: "continue", provider: "scripted" })).toBe(1)
      expect(total(families, "opencode_steps_total", { outcome: "stop", provider: "scripted" })).toBe(1)
      expect(total(families, "opencode_tokens_total", { kind: "input", provider: "scripted", model: "m" })).toBe(280)
      expect(total(families, "opencode_tokens_total", { kind: "output", provider: "scripted", model: "m" })).toBe(13)
      expect(total(families, "opencode_tokens_total", { kind: "cache_read" })).toBe(30)
      expect(total(families, "opencode_tokens_total", { kind: "reasoning" })).toBe(2)
      // The parser folds a labelled histogram's series into one (their labels dropped): with one series
      // each here, its buckets are that series'. The labelled samples are read off their exact lines.
      expect(byName.get("opencode_tool_duration_seconds")?.type).toBe("HISTOGRAM")
      expect(byName.get("opencode_tool_duration_seconds")?.metrics[0]?.buckets?.["+Inf"]).toBe("1")
      const tool = histogram(exposition, "opencode_tool_duration_seconds", 'tool="read",outcome="success"')
      expect(tool.count).toBe(1)
      expect(tool.sum).toBeGreaterThan(0)
      // Two Step requests and the title request, each timed.
      const provider = histogram(
        exposition,
        "opencode_provider_request_duration_seconds",
        'provider="scripted",model="m",outcome="ok"'
      )
      expect(provider.count).toBe(3)
      const commits = byName.get("opencode_db_commit_duration_seconds")
      expect(commits?.type).toBe("HISTOGRAM")
      expect(Number(commits?.metrics[0]?.count)).toBeGreaterThan(0)
      expect(Number(commits?.metrics[0]?.buckets?.["+Inf"])).toBe(Number(commits?.metrics[0]?.count))
      expect(total(families, "opencode_sessions_active")).toBe(0)
      expect(byName.get("opencode_sessions_active")?.type).toBe("GAUGE")

      // The final export happens at shutdown.
      child.kill("SIGTERM")
      expect(await exited(child)).toBe(0)

      const posts = collector.received
      expect(posts.length).toBeGreaterThan(0)
      for (const received of posts) {
        expect(received.path).toBe("/v1/traces")
        expect(received.contentType).toMatch(/^application\/json/)
        expect(received.headers["x-collector-token"]).toBe("s3cret token")
        expect(received.headers["x-tenant"]).toBe("t1")
      }
      const resources = posts.flatMap((received) => received.body.resourceSpans as Array<any>)
      for (const resource of resources) {
        expect(attributes(resource.resource.attributes)["service.name"]).toBe("opencode-under-test")
      }
      const spans = resources.flatMap((resource) =>
        (resource.scopeSpans as Array<any>).flatMap((scoped) => scoped.spans as Array<any>)
      )
      const named = (name: string) => spans.filter((span) => span.name === name)
      const childrenOf = (parent: any, name: string) =>
        named(name).filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId)

      // The HTTP server's spans are exported too, except the scrapes of /metrics.
      const serverPaths = named("http.server POST").map((span) => attributes(span.attributes)["url.path"])
      expect(serverPaths).toContain(`/api/session/${sessionID}/prompt`)
      expect(spans.filter((span) => attributes(span.attributes)["url.path"] === "/metrics")).toEqual([])

      // session: the Execution, the root of its own trace.
      const executions = named("SessionExecution.run").filter(
        (span) => attributes(span.attributes).sessionID === sessionID
      )
      expect(executions).toHaveLength(1)
      const execution = executions[0]!
      expect(execution.parentSpanId ?? "").toBe("")
      expect(execution.links.length).toBe(1)

      // Steps: two, each a child of the session's span, with its id, provider and model.
      const steps = childrenOf(execution, "StepRunner.run")
      expect(steps).toHaveLength(2)
      for (const step of steps) {
        expect(attributes(step.attributes)).toMatchObject({ sessionID, providerID: "scripted", modelID: "m" })
        expect(attributes(step.attributes).stepID).toMatch(/^msg_/)
      }
      const [first, second] = [...steps].sort((a, b) =>
        Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano))
      )

      // Provider calls: one per Step, below it.
      const call = childrenOf(first, "StepRunner.attempt")
      expect(call).toHaveLength(1)
      expect(childrenOf(second, "StepRunner.attempt")).toHaveLength(1)
      expect(attributes(call[0]!.attributes)).toMatchObject({ providerID: "scripted", modelID: "m" })
      // The wire request of the call is below it, and the HTTP client's request below that.
      const wire = childrenOf(call[0], "OpenAICompatible.stream")
      expect(wire).toHaveLength(1)
      const sent = childrenOf(wire[0], "http.client POST")
      expect(sent).toHaveLength(1)
      expect(attributes(sent[0]!.attributes)["url.path"]).toMatch(/chat\/completions$/)

      // Tool call: below the provider call that asked for it.
      const tools = childrenOf(call[0], "ToolSettlement.settle")
      expect(tools).toHaveLength(1)
      expect(attributes(tools[0]!.attributes)).toMatchObject({
        sessionID,
        tool: "read",
        callID: "call_read",
        stepID: attributes(first.attributes).stepID
      })
      expect(childrenOf(call[0], "ToolSettlement.settle").every((span) => span.status.code !== 2)).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 60_000)

  it("exports nothing and keeps serving when no endpoint is set", async () => {
    const collector = await receiver()
    const project = tempDir("otel-project")
    const { child, url } = await serve(project, { OTEL_SERVICE_NAME: "unused", XDG_CONFIG_HOME: tempDir("config") })
    expect((await post(`${url}/api/session`, {})).status).toBe(200)
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
    expect(collector.received).toEqual([])
  })
})

describe("GET /metrics behind the API's guard", () => {
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`

  it("answers 401 without credentials on a password-protected server, and the exposition with them", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const { url } = await Effect.runPromise(
        startServer({ OPENCODE_SERVER_PASSWORD: "s3cret" }).pipe(Scope.extend(scope))
      )
      const denied = await fetch(`${url}/metrics`)
      expect(denied.status).toBe(401)
      expect(denied.headers.get("www-authenticate")).toMatch(/^Basic/)
      expect(((await denied.json()) as { _tag: string })._tag).toBe("UnauthorizedError")
      expect((await fetch(`${url}/metrics`, { headers: { authorization: basic("opencode", "nope") } })).status).toBe(
        401
      )
      const authorization = basic("opencode", "s3cret")
      const created = await fetch(`${url}/api/session`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: "{}"
      })
      expect(created.status).toBe(200)
      const allowed = await fetch(`${url}/metrics`, { headers: { authorization } })
      expect(allowed.status).toBe(200)
      const families = parsePrometheus(await allowed.text())
      // The session's creation committed a durable event.
      expect(families.find((family) => family.name === "opencode_db_commit_duration_seconds")?.type).toBe("HISTOGRAM")
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("refuses a foreign Origin exactly like an API route", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const { url } = await Effect.runPromise(startServer().pipe(Scope.extend(scope)))
      const origin = "http://evil.example"
      const api = await fetch(`${url}/api/health`, { headers: { origin } })
      const metrics = await fetch(`${url}/metrics`, { headers: { origin } })
      expect(api.status).toBe(403)
      expect(metrics.status).toBe(api.status)
      const body = (await metrics.json()) as { _tag: string }
      expect(body).toEqual(await api.json())
      expect(body._tag).toBe("ForbiddenOriginError")
      // The server's own origin passes.
      expect((await fetch(`${url}/metrics`, { headers: { origin: url } })).status).toBe(200)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
