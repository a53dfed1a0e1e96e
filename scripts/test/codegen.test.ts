import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Context, Option, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Transport } from "../../packages/client/src/transport.js"
import { Api, ClientProjection, EventStream, LocationGroup } from "../../packages/protocol/src/index.js"
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
      // A rest-of-path parameter stands for the router wildcard the contract writes as `*`.
      const rest = operation.pathParams.find((p) => p.rest === true)
      const published = rest === undefined ? operation.path : operation.path.replace(`{${rest.name}}`, "*")
      const expected = reference.operations.find((r) => r.method === operation.method && r.path === published)
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
      "sessions.remove": null,
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
      "commands.list": null,
      "reference.list": null,
      "file.read": null,
      "file.list": null,
      "file.find": null,
      "integrations.list": null,
      "integrations.get": null,
      "integrations.connectKey": null,
      "integrations.connectOauth": null,
      "integrations.attemptStatus": null,
      "integrations.attemptCancel": null,
      "integrations.attemptComplete": null,
      "credentials.update": null,
      "credentials.remove": null,
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

  it("records a route's wildcard as the rest-of-path parameter `path`, and a byte success", () => {
    const read = contract.operations.find((o) => o.group === "file" && o.name === "read")!
    expect(read.path).toBe("/api/fs/read/{path}")
    expect(read.pathParams.map((p) => [p.name, p.required, p.rest])).toEqual([["path", true, true]])
    expect(read.success.contentType).toBe("application/octet-stream")
    const files = PromiseEmitter.emit(contract)
    const client = files.find((f) => f.path.endsWith("generated/client.ts"))!.content
    expect(client).toContain('read: "GET /api/fs/read/{path} &location rest=path bytes 404PathNotFoundError"')
    const types = files.find((f) => f.path.endsWith("generated/types.ts"))!.content
    expect(types).toContain("export type FilesReadResult = Blob")
    const effect = EffectEmitter.emit(contract)[0]!.content
    expect(effect).toContain("RestPath.within(input.path, client.file.read(")
    expect(effect).toContain("transformClient: RestPath.transformClient")
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
    expect(promise).toContain('subscribe: "GET /api/event stream=effect/httpapi/stream/failure"')
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
  HttpApi.make("probe").add(
    HttpApiGroup.make("probe")
      .add(endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps)
      .annotate(ClientProjection.Namespace, "probe")
  )

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
        .annotate(ClientProjection.Namespace, "probe")
    )
    expect(SdkContract.fromApi(api).operations.map((o) => o.name)).toEqual(["shown"])
  })
})

describe("client namespaces (the ClientProjection.Namespace annotation)", () => {
  it("every operation's namespace is its group's annotation; the settled names are the plural collections", () => {
    for (const group of Object.values(Api.OpenCodeApi.groups)) {
      const annotated = Context.getOption(group.annotations, ClientProjection.Namespace)
      expect(Option.isSome(annotated), `${group.identifier} states its namespace`).toBe(true)
      for (const operation of contract.operations.filter((o) => o.group === group.identifier)) {
        expect(operation.namespace).toBe(Option.getOrThrow(annotated))
      }
    }
    const namespaces = [...new Set(contract.operations.map((o) => o.namespace))]
    expect(namespaces).toEqual([
      "health",
      "location",
      "sessions",
      "instructions",
      "events",
      "agents",
      "models",
      "providers",
      "permissions",
      "questions",
      "skills",
      "commands",
      "reference",
      "mcp",
      "files",
      "integrations",
      "credentials",
      "ptys"
    ])
  })

  it("rejects a group without the annotation rather than publishing its identifier", () => {
    const api = HttpApi.make("probe").add(
      HttpApiGroup.make("internal").add(
        HttpApiEndpoint.get("get", "/x").addSuccess(Schema.Struct({ ok: Schema.Boolean }))
      )
    )
    expect(() => SdkContract.fromApi(api)).toThrow(/group internal: no ClientProjection.Namespace annotation/)
  })

  it("names the client namespace by the annotation, not the group identifier, in both emitters", () => {
    const api = HttpApi.make("probe").add(
      HttpApiGroup.make("internalThing")
        .add(HttpApiEndpoint.get("get", "/x").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
        .annotate(ClientProjection.Namespace, "things")
    )
    const probe = SdkContract.fromApi(api)
    expect(probe.operations.map((o) => [o.namespace, o.group, o.name])).toEqual([["things", "internalThing", "get"]])
    const promise = PromiseEmitter.emit(probe)
    const client = promise.find((f) => f.path.endsWith("generated/client.ts"))!.content
    expect(client).toContain("  readonly things: {\n")
    expect(client).toContain('  things: {\n    get: "GET /x"\n  }')
    // The identifier survives only as the default operationId in the documentation.
    expect(client).not.toContain("readonly internalThing")
    expect(client).not.toContain("internalThing: {")
    expect(promise.find((f) => f.path.endsWith("types.ts"))!.content).toContain("export interface ThingsGetResult")
    const effect = EffectEmitter.emit(probe)[0]!.content
    expect(effect).toContain("  readonly things: {\n")
    // The Effect facade still addresses HttpApiClient and the Endpoint types by the group identifier.
    expect(effect).toContain("get: () => client.internalThing.get({})")
    expect(effect).toContain('Endpoint.Success<"internalThing", "get">')
  })

  it("rejects two operations claiming one client method", () => {
    const api = HttpApi.make("probe")
      .add(
        HttpApiGroup.make("a")
          .add(HttpApiEndpoint.get("get", "/a").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
          .annotate(ClientProjection.Namespace, "things")
      )
      .add(
        HttpApiGroup.make("b")
          .add(HttpApiEndpoint.get("get", "/b").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
          .annotate(ClientProjection.Namespace, "things")
      )
    expect(() => SdkContract.fromApi(api)).toThrow(/client method things.get is claimed by both a.get and b.get/)
  })
})

describe("the Page projection (the ClientProjection.Page annotation)", () => {
  const Item = Schema.Struct({ n: Schema.Number }).annotations({ identifier: "ProbeItem" })
  const Envelope = Schema.Struct({
    data: Schema.Array(Item),
    cursor: Schema.Struct({ previous: Schema.optional(Schema.String), next: Schema.optional(Schema.String) })
  })
  const Query = Schema.Struct({
    limit: Schema.optional(Schema.NumberFromString),
    order: Schema.optional(Schema.Literal("asc", "desc")),
    cursor: Schema.optional(Schema.String)
  })
  const paged = (endpoint: HttpApiEndpoint.HttpApiEndpoint.Any) =>
    apiWith(
      (endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).annotate(ClientProjection.Page, {
        continuation: ["limit"]
      })
    )

  it("marks exactly the cursor-paged lists of the API: sessions.list and sessions.messages", () => {
    const pages = Object.fromEntries(
      contract.operations.filter((o) => o.page !== null).map((o) => [`${o.namespace}.${o.name}`, o.page])
    )
    expect(pages).toEqual({
      "sessions.list": {
        items: "data",
        links: "cursor",
        cursor: "cursor",
        initial: ["workspace", "limit", "order", "search", "directory", "project", "subpath"],
        continuation: ["limit"],
        pages: "listPages"
      },
      "sessions.messages": {
        items: "data",
        links: "cursor",
        cursor: "cursor",
        initial: ["limit", "order"],
        continuation: ["limit"],
        pages: "messagesPages"
      }
    })
    // Every other operation with a `cursor` query parameter would have to be paged too, except the PTY
    // connection, whose `cursor` is an offset into the terminal's output rather than a page link.
    const withCursor = contract.operations.filter((o) => o.queryParams.some((p) => p.name === "cursor"))
    expect(withCursor.filter((o) => o.page === null).map((o) => `${o.namespace}.${o.name}`)).toEqual(["ptys.connect"])
  })

  it("changes nothing on the wire: the paged operations keep their envelope success and full query", () => {
    const list = contract.operations.find((o) => o.operationId === "v2.session.list")!
    expect(list.success.schema).toEqual({ $ref: "#/components/schemas/SessionsResponse" })
    expect(list.queryParams.map((p) => p.name)).toContain("cursor")
  })

  it("the Promise emitter types the query and the continuation apart, and returns a Page", () => {
    const probe = SdkContract.fromApi(paged(HttpApiEndpoint.get("list", "/x").setUrlParams(Query).addSuccess(Envelope)))
    const files = PromiseEmitter.emit(probe)
    const types = files.find((f) => f.path.endsWith("types.ts"))!.content
    expect(types).toContain(
      'export interface ProbeListQuery {\n  readonly limit?: number | undefined\n  readonly order?: "asc" | "desc" | undefined\n  readonly cursor?: undefined\n}'
    )
    expect(types).toMatch(
      /export interface ProbeListContinuation \{\n(.*\n)* {2}readonly cursor: string\n {2}readonly limit\?: number \| undefined\n {2}readonly order\?: undefined\n\}/
    )
    expect(types).toContain("export type ProbeListInput = ProbeListQuery | ProbeListContinuation\n")
    expect(types).toContain("export type ProbeListResult = Page<ProbeItem>\n")
    expect(types).toContain("export interface Page<Item> {")
    const client = files.find((f) => f.path.endsWith("generated/client.ts"))!.content
    expect(client).toContain(
      "list(input?: ProbeListInput, options?: Transport.RequestOptions): Promise<ProbeListResult>"
    )
    expect(client).toContain(
      "listPages(query?: ProbeListQuery, options?: Transport.RequestOptions): AsyncIterable<ProbeListResult>"
    )
    expect(client).toContain(
      'list: "GET /x ?limit ?order ?cursor pages=listPages items=data links=cursor cursor=cursor"'
    )
    const effect = EffectEmitter.emit(probe)[0]!.content
    expect(effect).toContain(
      'readonly list: (input?: (Endpoint.PageQuery<"probe", "list"> | Endpoint.PageContinuation<"probe", "list", "limit">)) => Effect.Effect<Page.Page<Endpoint.PageItem<"probe", "list">>, Endpoint.Failure<"probe", "list">>'
    )
    expect(effect).toContain(
      'readonly listPages: (query?: Endpoint.PageQuery<"probe", "list">) => Stream.Stream<Page.Page<Endpoint.PageItem<"probe", "list">>, Endpoint.Failure<"probe", "list">>'
    )
  })

  it("rejects an annotated endpoint that is not a cursor-paged list envelope", () => {
    expect(() =>
      SdkContract.fromApi(
        paged(
          HttpApiEndpoint.get("list", "/x")
            .setUrlParams(Query)
            .addSuccess(Schema.Struct({ data: Schema.Array(Item), total: Schema.Number }))
        )
      )
    ).toThrow(/probe\.list: a ClientProjection.Page endpoint must succeed with a required `cursor: \{previous/)
    expect(() =>
      SdkContract.fromApi(
        paged(
          HttpApiEndpoint.get("list", "/x")
            .setUrlParams(Query)
            .addSuccess(Schema.Struct({ data: Schema.Array(Item) }))
        )
      )
    ).toThrow(/must succeed with a JSON list envelope returned whole/)
    expect(() =>
      SdkContract.fromApi(
        paged(
          HttpApiEndpoint.get("list", "/x")
            .setUrlParams(Schema.Struct({ limit: Schema.optional(Schema.String) }))
            .addSuccess(Envelope)
        )
      )
    ).toThrow(/must take an optional `cursor` query parameter/)
    expect(() =>
      SdkContract.fromApi(
        apiWith(
          HttpApiEndpoint.get("list", "/x")
            .setUrlParams(Query)
            .addSuccess(Envelope)
            .annotate(ClientProjection.Page, { continuation: ["size"] })
        )
      )
    ).toThrow(/names "size" as a continuation parameter/)
  })
})

describe("the Promise client's operation descriptors", () => {
  it("read back (Transport.operation) as the IR describes every operation", () => {
    const shared = PromiseEmitter.sharedErrors(contract)
    expect(shared).toEqual(["400InvalidRequestError", "401UnauthorizedError"])
    for (const o of contract.operations) {
      const name = `${o.namespace}.${o.name}`
      const descriptor = PromiseEmitter.descriptor(contract, o, shared)
      const op = Transport.operation(name, [descriptor, ...shared].join(" "))
      const errors: Record<number, Array<string>> = {}
      for (const e of o.errors) errors[e.status] = [...(errors[e.status] ?? []), e.tag]
      const body =
        o.body === null
          ? undefined
          : JsonSchema.properties(JsonSchema.resolve(o.body.schema, contract.components)).map(([field]) => field)
      const expected: Record<string, unknown> = {
        name,
        method: o.method,
        path: o.path,
        query: o.queryParams.map((p) => [p.name, p.style === "deepObject"]),
        status: o.success.status,
        errors
      }
      if (body !== undefined) expected.body = body
      const rest = o.pathParams.find((p) => p.rest === true)
      if (rest !== undefined) expected.rest = rest.name
      if (o.stream !== null) expected.stream = o.stream.failureEvent
      else if (o.success.contentType === "application/octet-stream") expected.bytes = true
      else if (o.success.contentType === null) expected.empty = true
      if (o.success.unwrap !== null) expected.unwrap = o.success.unwrap
      if (o.page !== null) {
        const { pages, items, links, cursor } = o.page
        Object.assign(expected, { pages, items, links, cursor })
      }
      expect({ ...op }, name).toEqual(expected)
    }
  })

  it("refuses a name that a descriptor cannot hold", () => {
    const api = HttpApi.make("probe").add(
      HttpApiGroup.make("probe")
        .add(
          HttpApiEndpoint.get("list", "/x")
            .setUrlParams(Schema.Struct({ "a=b": Schema.optional(Schema.String) }))
            .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
        )
        .annotate(ClientProjection.Namespace, "probe")
    )
    expect(() => PromiseEmitter.emit(SdkContract.fromApi(api))).toThrow(
      /probe.list: "a=b" cannot be written in a descriptor/
    )
  })
})
