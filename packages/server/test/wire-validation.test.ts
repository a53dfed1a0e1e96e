import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ToolRegistry as Registry, type ToolRegistry } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { OpenApiDocument } from "@opencode-ai/protocol"
import { ContractExtension } from "@opencode-ai/schema"
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js"
import { Effect } from "effect"
import { scriptedHost } from "./scripted-host.js"
import { type Frame, SseReader } from "./stream-harness.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * Every frame both event streams send, validated against the upstream contract's own JSON Schemas
 * (`shared/reference/opencode-v2-openapi.json`, `$ref`s resolved inside that document) with Ajv:
 * `GET /api/event` against `V2Event`, `GET /api/session/{id}/event` against the SSE frame the
 * contract declares and its `SessionDurableEvent`. The session is driven for real (listener, Core,
 * scripted LLM on loopback): a text turn, a tool that asks a permission, the built-in read tool, the
 * question tool, a background title and a compaction.
 *
 * The only frames not checked against the contract are the durable events our contract declares as
 * extensions (`session.next.title.updated`, `session.next.usage.recorded`: the contract has no event
 * for them): on the session stream they are checked against our own document instead, and the test
 * fails if any other type needs that. The global stream has no such exception.
 */

type Json = any

const referenceFile = path.resolve(__dirname, "../../protocol/test/fixtures/opencode-v2-openapi.json")
const reference: Json = JSON.parse(fs.readFileSync(referenceFile, "utf8"))
const ours: Json = JSON.parse(JSON.stringify(OpenApiDocument.make()))

/** A document without nested `$id`s: Effect names its built-ins with one (`/schemas/unknown`), used many times. */
const withoutIds = (value: Json): Json =>
  Array.isArray(value)
    ? value.map(withoutIds)
    : value !== null && typeof value === "object"
      ? Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (k === "$id" ? [] : [[k, withoutIds(v)]])))
      : value

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
ajv.addSchema({ ...withoutIds(reference), $id: "reference" })
ajv.addSchema({ ...withoutIds(ours), $id: "ours" })
const validator = (document: "reference" | "ours", component: string): ValidateFunction =>
  ajv.compile({ $ref: `${document}#/components/schemas/${component}` })
const sessionFrame: ValidateFunction = ajv.compile({
  $ref: "reference#/paths/~1api~1session~1{sessionID}~1event/get/responses/200/content/text~1event-stream/schema"
})

const v2Event = validator("reference", "V2Event")
const durableEvent = validator("reference", "SessionDurableEvent")
const ourDurableEvent = validator("ours", "SessionDurableEvent")

/** Our declared durable extensions: the only event types allowed outside the contract's union. */
const durableExtensions: ReadonlySet<string> = new Set(["session.next.title.updated", "session.next.usage.recorded"])

const failures = (validate: ValidateFunction) => ajv.errorsText(validate.errors, { separator: "\n" })

/** A test tool that asks for `probe` on its target before it answers. */
const probe: ToolRegistry.Tool = {
  name: "probe",
  description: "Probe a target",
  inputSchema: { type: "object", properties: { target: { type: "string" } }, required: ["target"] },
  execute: (input, ctx) =>
    Effect.as(ctx.ask({ action: "probe", resources: [String(input.target)] }), {
      content: [{ type: "text" as const, text: `probed ${String(input.target)}` }]
    })
}

/** Reads `reader` in the background into `frames` until it ends or is cancelled. */
const collect = (reader: SseReader, frames: Array<Frame>) =>
  Effect.forkScoped(
    Effect.promise(async () => {
      for (;;) {
        const frame = await reader.next()
        if (frame === undefined) return
        frames.push(frame)
      }
    })
  )

describe("every frame of both event streams validates against the reference contract", () => {
  it("the contract itself: the documents load and the stream schemas compile", () => {
    expect(reference.components.schemas.V2Event.anyOf.length).toBeGreaterThan(40)
    expect(reference.components.schemas.SessionDurableEvent.oneOf.length).toBe(28)
    expect(ContractExtension.fields).toBeDefined()
    // The checks can fail: an event of an unknown type, or with a field missing, is rejected.
    expect(v2Event({ id: "evt_x", type: "server.heartbeat", data: {} })).toBe(false)
    expect(durableEvent({ id: "evt_x", type: "session.next.synthetic", data: {} })).toBe(false)
    expect(v2Event({ id: "evt_x", type: "server.connected", data: {} })).toBe(true)
  })

  it.scopedLive(
    "a scripted session (text, tools, a permission, a question, a title, a compaction): global and session streams",
    () =>
      Effect.gen(function* () {
        const t = yield* scriptedHost({
          prefix: "wire",
          requests: "permission",
          agent: { build: { permission: { probe: "ask" } } }
        })
        yield* Effect.provide(
          Effect.flatMap(Registry.Service, (registry) => registry.register(probe)),
          t.context
        )
        fs.writeFileSync(path.join(t.directory, "notes.txt"), "first line\nsecond line\n")

        const global: Array<Frame> = []
        const live = new SseReader(yield* Effect.promise(() => fetch(`${t.url}/api/event`)))
        yield* Effect.addFinalizer(() => Effect.promise(() => live.cancel()))
        yield* collect(live, global)

        // A session created while the stream is open, so session.created is on it.
        const session = (yield* t.call("POST", "/api/session", {})).body.data as { id: string }
        const base = `/api/session/${session.id}`
        const prompt = (words: string) => t.call("POST", `${base}/prompt`, { prompt: { text: words } })
        const wait = () => t.call("POST", `${base}/wait`)
        const pending = (route: string) =>
          Effect.gen(function* () {
            for (;;) {
              const listed = yield* t.call("GET", `${base}/${route}`)
              if (listed.body.data.length > 0) return listed.body.data[0] as { id: string }
              yield* Effect.sleep("5 millis")
            }
          })

        // 1. A text turn; the background title follows it.
        yield* t.llm.enqueueTitle(reply(text("Greeting the user"), finish("stop")))
        yield* t.llm.enqueue(reply(text("Hello there."), finish("stop")))
        yield* prompt("hi")
        expect((yield* wait()).status).toBeLessThan(300)

        // 2. A tool that asks a permission (answered once), then the built-in read tool.
        yield* t.llm.enqueue(
          reply(toolCall("call_probe", "probe", { target: "a.txt" }), finish("tool-calls")),
          reply(toolCall("call_read", "read", { filePath: path.join(t.directory, "notes.txt") }), finish("tool-calls")),
          reply(text("Probed and read."), finish("stop"))
        )
        yield* prompt("probe a.txt, then read notes.txt")
        const permission = yield* pending("permission")
        expect((yield* t.call("POST", `${base}/permission/${permission.id}/reply`, { reply: "once" })).status).toBe(204)
        expect((yield* wait()).status).toBeLessThan(300)

        // 3. The question tool, answered.
        const questions = [
          { question: "Which database?", header: "Database", options: [{ label: "SQLite", description: "a file" }] }
        ]
        yield* t.llm.enqueue(
          reply(toolCall("call_question", "question", { questions }), finish("tool-calls")),
          reply(text("SQLite it is."), finish("stop"))
        )
        yield* prompt("ask me")
        const question = yield* pending("question")
        expect(
          (yield* t.call("POST", `${base}/question/${question.id}/reply`, { answers: [["SQLite"]] })).status
        ).toBeLessThan(300)
        expect((yield* wait()).status).toBeLessThan(300)

        // 4. A compaction of the idle session.
        yield* t.llm.enqueue(reply(text("## Summary\nGreeted, probed, read, asked."), finish("stop")))
        expect((yield* t.call("POST", `${base}/compact`)).status).toBe(204)
        expect((yield* wait()).status).toBeLessThan(300)

        // The whole durable log, as the session stream serves it.
        const history = (yield* t.call("GET", `${base}/history?limit=1000`)).body as {
          data: Array<{ type: string; durable: { seq: number } }>
        }
        const last = history.data.at(-1)!.durable.seq
        const types = history.data.map((event) => event.type)
        for (const type of [
          "session.next.compaction.ended",
          "session.next.tool.success",
          "session.next.title.updated"
        ]) {
          expect(types).toContain(type)
        }

        const durable = new SseReader(yield* Effect.promise(() => fetch(`${t.url}${base}/event`)))
        yield* Effect.addFinalizer(() => Effect.promise(() => durable.cancel()))
        const sessionFrames: Array<Frame> = []
        while (sessionFrames.at(-1)?.id !== String(last)) {
          const frame = yield* Effect.promise(() => durable.next())
          if (frame === undefined) return yield* Effect.dieMessage("the session stream ended")
          sessionFrames.push(frame)
        }

        // ── The session stream ──
        expect(sessionFrames[0]?.id).toBe("1")
        expect(sessionFrames.map((frame) => Number(frame.id))).toEqual(
          Array.from({ length: last }, (_, index) => index + 1)
        )
        const extensionTypes = new Set<string>()
        for (const frame of sessionFrames) {
          expect(sessionFrame({ id: frame.id, event: frame.event, data: frame.data }), failures(sessionFrame)).toBe(
            true
          )
          const event = JSON.parse(frame.data)
          if (durableExtensions.has(event.type)) {
            extensionTypes.add(event.type)
            expect(ourDurableEvent(event), `${event.type}: ${failures(ourDurableEvent)}`).toBe(true)
            continue
          }
          expect(durableEvent(event), `${event.type} (seq ${frame.id}): ${failures(durableEvent)}`).toBe(true)
        }
        expect(extensionTypes).toContain("session.next.title.updated")

        // ── The global stream ──
        // Wait until the last durable commit has been seen live, then check every frame received.
        while (!global.some((frame) => frame.data.includes(`"seq":${last},`) && frame.data.includes(session.id))) {
          yield* Effect.sleep("5 millis")
        }
        const seen = new Set<string>()
        for (const frame of global) {
          const event = JSON.parse(frame.data)
          seen.add(event.type)
          expect(frame.event).toBe(event.type)
          expect(v2Event(event), `${event.type}: ${failures(v2Event)}`).toBe(true)
          if (typeof event.data?.sessionID === "string") {
            expect(event.location, `${event.type} carries its session's location`).toEqual({ directory: t.directory })
          }
        }
        for (const type of [
          "server.connected",
          "session.created",
          "session.updated",
          "session.next.text.delta",
          "session.next.tool.success",
          "permission.v2.asked",
          "permission.v2.replied",
          "question.v2.asked",
          "question.v2.replied",
          "session.next.compaction.ended"
        ]) {
          expect(seen, `the global stream carried ${type}`).toContain(type)
        }
        expect(seen).not.toContain("session.next.title.updated")
      })
  )
})
