import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Api, EventStream, LocationGroup } from "../../packages/protocol/src/index.js"
import referenceDocument from "../../packages/protocol/test/fixtures/opencode-v2-openapi.json" with { type: "json" }
import { EffectEmitter } from "../codegen/effect-emitter.js"
import { Generate } from "../codegen/generate.js"
import { SdkContract } from "../codegen/ir.js"
import { JsonSchema } from "../codegen/json-schema.js"
import { PromiseEmitter } from "../codegen/promise-emitter.js"

/** Every operation of the upstream reference contract, as method, path and operationId. */
const reference = {
  operations: Object.entries(
    referenceDocument.paths as Record<string, Record<string, { operationId: string }>>
  ).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, operationId: op.operationId }))
  )
}

const contract = SdkContract.fromApi(Api.OpenCodeApi)

/** Every endpoint of the API that OpenAPI publishes, by walking the groups directly (not through reflect). */
const endpoints = Object.values(Api.OpenCodeApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({ group: group.identifier, name: endpoint.name }))
)

describe("SDK Contract IR of Api.OpenCodeApi", () => {
  it("has one operation per endpoint, in declaration order", () => {
    expect(contract.operations.length).toBe(endpoints.length)
    expect(contract.operations.map((o) => ({ group: o.group, name: o.name }))).toEqual(endpoints)
  })

  it("gives each operation the reference operationId for its method and path (extensions aside)", () => {
    for (const operation of contract.operations.filter((o) => !Api.extensionOperations.has(o.operationId))) {
      const expected = reference.operations.find((r) => r.method === operation.method && r.path === operation.path)
      expect(expected, `${operation.method} ${operation.path} is a reference operation`).toBeDefined()
      expect(operation.operationId).toBe(expected?.operationId)
    }
  })

  it("is deterministic", () => {
    expect(SdkContract.serialize(SdkContract.fromApi(Api.OpenCodeApi))).toBe(SdkContract.serialize(contract))
  })

  it("unwraps {data} envelopes only: sessions.get/create unwrap; the {data, cursor} page, {location, data} and health do not", () => {
    const unwrap = Object.fromEntries(contract.operations.map((o) => [`${o.group}.${o.name}`, o.success.unwrap]))
    expect(unwrap).toEqual({
      "health.get": null,
      "location.get": null,
      "mcp.list": "data",
      "sessions.create": "data",
      "sessions.list": null,
      "sessions.get": "data",
      "sessions.events": null,
      "sessions.prompt": "data",
      "sessions.revertClear": null,
      "sessions.revertCommit": null,
      "sessions.revertStage": "data",
      "sessions.messages": null,
      "sessions.move": "data",
      "sessions.message": "data",
      "sessions.context": "data",
      "sessions.history": null,
      "sessions.switchAgent": null,
      "sessions.switchModel": null,
      "sessions.active": "data",
      "sessions.interrupt": null,
      "sessions.wait": null,
      "sessions.compact": null,
      "instructions.list": "data",
      "instructions.put": "data",
      "instructions.remove": null,
      "events.subscribe": null,
      "events.token": null,
      "agents.list": null,
      "agents.generate": "data",
      "models.list": null,
      "providers.list": null,
      "providers.get": null,
      "permissions.listRequests": null,
      "permissions.listSaved": "data",
      "permissions.removeSaved": null,
      "permissions.create": "data",
      "permissions.list": "data",
      "permissions.get": "data",
      "permissions.reply": null,
      "questions.listRequests": null,
      "questions.list": "data",
      "questions.reply": null,
      "questions.reject": null,
      "skills.list": null,
      "reference.list": null,
      "pty.list": null,
      "pty.create": null,
      "pty.get": null,
      "pty.update": null,
      "pty.remove": null,
      "pty.connectToken": null,
      "pty.connect": null
    })
  })

  it("records path parameters, query styles, body and declared errors (API-wide, middleware and endpoint)", () => {
    const get = contract.operations.find((o) => o.group === "sessions" && o.name === "get")!
    expect(get.path).toBe("/api/session/{sessionID}")
    expect(get.pathParams.map((p) => [p.name, p.required])).toEqual([["sessionID", true]])
    expect(get.errors.map((e) => [e.status, e.tag])).toEqual([
      [400, "InvalidRequestError"],
      [401, "UnauthorizedError"],
      [404, "SessionNotFoundError"]
    ])
    expect(get.streaming).toBe("none")
    const list = contract.operations.find((o) => o.group === "sessions" && o.name === "list")!
    expect(list.errors.filter((e) => e.status === 400).map((e) => e.tag)).toEqual([
      "InvalidCursorError",
      "InvalidRequestError"
    ])
    const location = contract.operations.find((o) => o.group === "location")!
    expect(location.queryParams.map((p) => [p.name, p.style])).toEqual([["location", "deepObject"]])
    const create = contract.operations.find((o) => o.name === "create")!
    expect(create.body?.contentType).toBe("application/json")
    expect(Object.keys(contract.components)).toContain("SessionV2Info")
  })
})

describe("SSE operations in the IR and both emitters", () => {
  const events = contract.operations.find((o) => o.group === "sessions" && o.name === "events")!
  const subscribe = contract.operations.find((o) => o.group === "events" && o.name === "subscribe")!

  it("records the stream: framing, the event schema of each frame's data and the failure event", () => {
    expect(events.streaming).toBe("sse")
    expect(events.stream).toEqual({
      framing: "frames",
      event: { $ref: "#/components/schemas/SessionDurableEvent" },
      failureEvent: "effect/httpapi/stream/failure"
    })
    expect(events.queryParams.map((p) => [p.name, p.required])).toEqual([["after", false]])
    expect(events.errors.map((e) => [e.status, e.tag])).toContainEqual([404, "SessionNotFoundError"])
    expect(subscribe.stream).toEqual({
      framing: "events",
      event: { $ref: "#/components/schemas/V2Event" },
      failureEvent: "effect/httpapi/stream/failure"
    })
    expect(contract.operations.filter((o) => o.stream === null).every((o) => o.streaming === "none")).toBe(true)
  })

  it("the Promise emitter returns a lazy AsyncIterable of the event type; the Effect emitter a Stream", () => {
    const files = [...PromiseEmitter.emit(contract), ...EffectEmitter.emit(contract)]
    const content = (suffix: string) => files.find((f) => f.path.endsWith(suffix))!.content
    expect(content("generated/types.ts")).toContain("export type SessionsEventsEvent = SessionDurableEvent\n")
    expect(content("generated/types.ts")).toContain("export type EventsSubscribeEvent = V2Event\n")
    const promise = content("src/generated/client.ts")
    expect(promise).toContain(
      "events(input: SessionsEventsInput, options?: Transport.RequestOptions): AsyncIterable<SessionsEventsEvent>"
    )
    expect(promise).toContain(
      "subscribe(input?: EventsSubscribeInput, options?: Transport.RequestOptions): AsyncIterable<EventsSubscribeEvent>"
    )
    expect(promise).toContain('stream: { failureEvent: "effect/httpapi/stream/failure" }')
    const effect = content("effect/generated/opencode-client.ts")
    expect(effect).toContain(
      'readonly events: (input: Endpoint.Path<"sessions", "events"> & Endpoint.UrlParams<"sessions", "events">) => Stream.Stream<Endpoint.Success<"sessions", "events">["data"], Endpoint.StreamFailure<"sessions", "events">>'
    )
    expect(effect).toContain(
      'readonly subscribe: (input?: Endpoint.NoInput) => Stream.Stream<Endpoint.Success<"events", "subscribe">, Endpoint.StreamFailure<"events", "subscribe">>'
    )
  })

  it("rejects a text/event-stream success without the EventStream declaration", () => {
    const api = apiWith(
      HttpApiEndpoint.get("tail", "/x").addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
    )
    expect(() => SdkContract.fromApi(api)).toThrow(
      /probe\.tail: a text\/event-stream success needs the EventStream annotation/
    )
  })

  it("reads a probe stream declared with Protocol's EventStream helpers", () => {
    const Tick = Schema.Struct({ type: Schema.Literal("tick"), n: Schema.Number }).annotations({
      identifier: "ProbeTick"
    })
    const api = apiWith(
      HttpApiEndpoint.get("tail", "/x")
        .addSuccess(EventStream.frames(Tick))
        .annotate(EventStream.Annotation, EventStream.framesDeclaration)
        .annotate(OpenApi.Transform, EventStream.openApi)
    )
    const [operation] = SdkContract.fromApi(api).operations
    expect(operation?.stream).toEqual({
      framing: "frames",
      event: { $ref: "#/components/schemas/ProbeTick" },
      failureEvent: EventStream.failureEvent
    })
    const types = PromiseEmitter.emit(SdkContract.fromApi(api)).find((f) => f.path.endsWith("types.ts"))!.content
    expect(types).toContain("export type ProbeTailEvent = ProbeTick\n")
  })
})

describe("generated files", () => {
  it("are up to date (the generator in check mode finds nothing stale)", () => {
    expect(Generate.run({ check: true }).stale).toEqual([])
  })

  it("check mode names changed, missing and extraneous files without touching them; write mode repairs them", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "codegen-"))
    try {
      expect(Generate.run({ check: false, root }).stale.length).toBe(Generate.files().length)
      expect(Generate.run({ check: true, root }).stale).toEqual([])
      const changed = path.join(root, PromiseEmitter.directory, "client.ts")
      fs.appendFileSync(changed, "// edited\n")
      fs.rmSync(path.join(root, Generate.contractPath))
      fs.writeFileSync(path.join(root, PromiseEmitter.directory, "leftover.ts"), "export {}\n")
      const stale = [
        Generate.contractPath,
        `${PromiseEmitter.directory}/client.ts`,
        `${PromiseEmitter.directory}/leftover.ts`
      ].sort()
      expect(Generate.run({ check: true, root }).stale).toEqual(stale)
      expect(fs.readFileSync(changed, "utf8").endsWith("// edited\n")).toBe(true)
      expect(Generate.run({ check: false, root }).stale).toEqual(stale)
      expect(Generate.run({ check: true, root }).stale).toEqual([])
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  it("the CLI's --check exits 0 when nothing is stale", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "scripts/generate.ts", "--check"], {
      cwd: Generate.root,
      encoding: "utf8"
    })
    expect(out).toContain("up to date")
  })
})

/** A one-endpoint API for probing the IR builder. */
const apiWith = (endpoint: HttpApiEndpoint.HttpApiEndpoint.Any) =>
  HttpApi.make("probe").add(HttpApiGroup.make("probe").add(endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps))

describe("IR builder and emitters on probe APIs", () => {
  it("rejects a path parameter and a body field with the same name", () => {
    const api = apiWith(
      HttpApiEndpoint.post("update", "/x/:sessionID")
        .setPath(Schema.Struct({ sessionID: Schema.String }))
        .setPayload(Schema.Struct({ sessionID: Schema.String, title: Schema.String }))
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    expect(() => SdkContract.fromApi(api)).toThrow(
      /probe\.update: input name collision: "sessionID" is both a path parameter and a body field/
    )
  })

  it("rejects a query parameter and a body field with the same name", () => {
    const api = apiWith(
      HttpApiEndpoint.post("update", "/x")
        .setUrlParams(Schema.Struct({ title: Schema.optional(Schema.String) }))
        .setPayload(Schema.Struct({ title: Schema.String }))
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    expect(() => SdkContract.fromApi(api)).toThrow(
      /input name collision: "title" is both a query parameter and a body field/
    )
  })

  it("rejects a form query parameter that shares its name with a deepObject parameter", () => {
    const api = apiWith(
      HttpApiEndpoint.get("get", "/x")
        .setUrlParams(
          Schema.Struct({
            location: Schema.optional(Schema.String),
            "location[directory]": Schema.optional(Schema.String)
          })
        )
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    expect(() => SdkContract.fromApi(api)).toThrow(/input name collision: query parameter "location" is declared twice/)
  })

  it("groups bracketed query keys into one deepObject parameter even without an OpenAPI override", () => {
    const api = apiWith(
      HttpApiEndpoint.get("get", "/x")
        .setUrlParams(LocationGroup.LocationQuery)
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    const [operation] = SdkContract.fromApi(api).operations
    expect(operation?.queryParams).toEqual([
      {
        name: "location",
        style: "deepObject",
        required: false,
        schema: {
          additionalProperties: false,
          properties: { directory: { type: "string" }, workspace: { type: "string" } },
          required: [],
          type: "object"
        },
        decoded: {
          additionalProperties: false,
          properties: { directory: { type: "string" }, workspace: { type: "string" } },
          required: [],
          type: "object"
        }
      }
    ])
  })

  it("rejects fields renamed between the wire and the decoded form", () => {
    const api = apiWith(
      HttpApiEndpoint.get("get", "/x")
        .setUrlParams(Schema.Struct({ pageSize: Schema.optional(Schema.String).pipe(Schema.fromKey("page_size")) }))
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    expect(() => SdkContract.fromApi(api)).toThrow(/renamed fields are not supported/)
  })

  it("records the decoded form of URL parameters next to their wire form", () => {
    const api = apiWith(
      HttpApiEndpoint.get("get", "/x")
        .setUrlParams(Schema.Struct({ limit: Schema.NumberFromString }))
        .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
    )
    const probe = SdkContract.fromApi(api)
    const [limit] = probe.operations[0]!.queryParams
    expect(JsonSchema.resolve(limit!.schema, probe.components).type).toBe("string")
    expect(JsonSchema.resolve(limit!.decoded, probe.decodedComponents).type).toBe("number")
    // The Promise emitter types such a parameter by its decoded form.
    const types = PromiseEmitter.emit(probe).find((f) => f.path.endsWith("types.ts"))!.content
    expect(types).toContain("readonly limit: number\n")
  })

  it("the Promise emitter rejects a generated type name that a component already uses", () => {
    const api = apiWith(
      HttpApiEndpoint.get("get", "/x").addSuccess(
        Schema.Struct({ ok: Schema.Boolean }).annotations({ identifier: "ProbeGetResult" })
      )
    )
    expect(() => PromiseEmitter.emit(SdkContract.fromApi(api))).toThrow(
      /generated type name collision: ProbeGetResult \(probe.get result\)/
    )
  })

  it("the Promise emitter declares a named union of object types as a type alias, not an interface", () => {
    const Shape = Schema.Union(
      Schema.Struct({ kind: Schema.Literal("a"), a: Schema.String }),
      Schema.Struct({ kind: Schema.Literal("b"), b: Schema.Struct({ n: Schema.Number }) })
    ).annotations({ identifier: "ProbeShape" })
    const api = apiWith(HttpApiEndpoint.get("get", "/x").addSuccess(Schema.Struct({ shape: Shape })))
    const types = PromiseEmitter.emit(SdkContract.fromApi(api)).find((f) => f.path.endsWith("types.ts"))!.content
    expect(types).toMatch(/export type ProbeShape = \{\n[\s\S]*\} \| \{\n/)
    expect(types).not.toContain("export interface ProbeShape")
  })

  it("leaves endpoints excluded from OpenAPI out of the IR", () => {
    const api = HttpApi.make("probe").add(
      HttpApiGroup.make("probe")
        .add(HttpApiEndpoint.get("shown", "/a").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
        .add(
          HttpApiEndpoint.get("hidden", "/b")
            .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
            .annotate(OpenApi.Exclude, true)
        )
    )
    expect(SdkContract.fromApi(api).operations.map((o) => o.name)).toEqual(["shown"])
  })
})
