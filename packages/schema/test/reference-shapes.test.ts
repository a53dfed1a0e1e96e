import * as fs from "node:fs"
import * as path from "node:path"
import * as Schemas from "@opencode-ai/schema"
import { ContractExtension } from "@opencode-ai/schema"
import { JSONSchema, Schema } from "effect"
import { describe, expect, it } from "vitest"

/**
 * Shape conformance with the upstream wire contract. Every schema this package exports whose JSON
 * Schema carries an identifier (its OpenAPI component name) is compared with the reference component
 * of the same name, both fully resolved. The list is read from the package's exports, so exporting a
 * new identified schema adds its check; one with no reference counterpart must be listed in
 * `extensions` with a reason.
 */
type Json = any

// A copy of `shared/reference/opencode-v2-openapi.json`: the observed upstream 1.18.33 contract.
const reference: Json = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, "fixtures/opencode-v2-openapi.json"), "utf8")
)
const components: Record<string, Json> = reference.components.schemas

// ── Normalization ─────────────────────────────────────────────────────────────────────────────────
//
// Removed: documentation (`description`, `title`, `examples`, `$comment`) and meta keys that state no
// constraint (`$schema`, `$id`; Effect uses `$id` only to name its built-ins). Also removed: keywords
// that constrain nothing (`required: []`, `properties: {}`). `allOf` fragments and `$ref` siblings are
// merged into one constraint set, `required` is sorted, and duplicate `anyOf` alternatives collapse
// (a single one is unwrapped). `anyOf` order is kept: we declare unions in the contract's order.

// Also removed: `maxLength`, our input bounds (prompt text, attachment URIs); upstream's strings are
// unbounded, and a bound changes no shape a client builds.
const DROPPED = new Set(["description", "title", "examples", "$comment", "$schema", "$id", "$defs", "maxLength"])
const NAME_MAPS = new Set(["properties", "patternProperties", "definitions"])

const sortKeys = (value: Json): Json =>
  Array.isArray(value)
    ? value.map(sortKeys)
    : value && typeof value === "object"
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, sortKeys(value[k])])
        )
      : value

const key = (value: Json) => JSON.stringify(sortKeys(value))

const normalize = (schema: Json, lookup: (ref: string) => [string, Json], seen: ReadonlyArray<string> = []): Json => {
  if (Array.isArray(schema)) return schema.map((s) => normalize(s, lookup, seen))
  if (schema === null || typeof schema !== "object") return schema
  let out: Json = {}
  const { $ref, ...rest } = schema
  if (typeof $ref === "string") {
    const [name, target] = lookup($ref)
    out = seen.includes(name) ? { $recursive: name } : normalize(target, lookup, [...seen, name])
  }
  for (const [k, value] of Object.entries(rest)) {
    if (DROPPED.has(k)) continue
    if (k === "allOf") {
      for (const part of value as Array<Json>) out = { ...out, ...normalize(part, lookup, seen) }
    } else if (NAME_MAPS.has(k)) {
      // Property names are data, not keywords: a property called `description` must stay.
      const entries = Object.entries(value as Record<string, Json>).map(([n, s]) => [n, normalize(s, lookup, seen)])
      if (entries.length > 0) out[k] = Object.fromEntries(entries)
    } else out[k] = normalize(value, lookup, seen)
  }
  if (Array.isArray(out.required)) {
    if (out.required.length === 0) delete out.required
    else out.required = [...out.required].sort()
  }
  if (Array.isArray(out.anyOf)) {
    const unique = [...new Map(out.anyOf.map((s: Json) => [key(s), s])).values()]
    if (unique.length === 1) {
      const { anyOf: _, ...others } = out
      out = { ...others, ...(unique[0] as Json) }
    } else out.anyOf = unique
  }
  return out
}

const referenceShape = (name: string): Json =>
  normalize({ $ref: `#/components/schemas/${name}` }, (ref) => {
    const n = ref.replace("#/components/schemas/", "")
    return [n, components[n]]
  })

/**
 * One of our components with its declared Contract Extensions taken out (see `ContractExtension`):
 * each added property must be there and optional, and a widened union must be exactly the contract's
 * component plus the added alternatives (then it stands for the contract's component). Anything else
 * of the extension would be a difference the comparison reports.
 */
const withoutExtensions = (name: string, target: Json, document: Json): [string, Json] => {
  const widened = ContractExtension.widened[name]
  if (widened !== undefined) {
    const refs = (target.anyOf as Array<Json>).map((s) => String(s.$ref).replace("#/$defs/", ""))
    expect(refs, `${name} widens ${widened.of}`).toEqual([widened.of, ...widened.added])
    return [widened.of, document.$defs[widened.of]]
  }
  const added = ContractExtension.fields[name]
  if (added === undefined) return [name, target]
  const properties = { ...target.properties }
  for (const field of Object.keys(added)) {
    expect(properties[field], `${name}.${field} is declared as an extension`).toBeDefined()
    expect(target.required ?? [], `${name}.${field} is optional`).not.toContain(field)
    delete properties[field]
  }
  return [name, { ...target, properties }]
}

const ourShape = (schema: Schema.Schema.Any): Json => {
  const document: Json = JSONSchema.make(schema)
  const top = typeof document.$ref === "string" ? document.$ref.replace("#/$defs/", "") : undefined
  return normalize(document, (ref) => {
    const n = ref.replace("#/$defs/", "")
    // The widened component itself is compared by name (it is a listed extension), not stood in for.
    return n === top && ContractExtension.widened[n] !== undefined
      ? [n, document.$defs[n]]
      : withoutExtensions(n, document.$defs[n], document)
  })
}

// ── What is compared ──────────────────────────────────────────────────────────────────────────────

const exported = Object.entries(Schemas).flatMap(([module, members]) =>
  Object.entries(members as Record<string, unknown>).flatMap(([name, value]) => {
    if (!Schema.isSchema(value)) return []
    const document: Json = JSONSchema.make(value as Schema.Schema.Any)
    const top = typeof document.$ref === "string" ? document.$ref.replace("#/$defs/", "") : undefined
    return top === undefined ? [] : [{ module, name, component: top, schema: value as Schema.Schema.Any }]
  })
)

/** Identified exports with no reference component of that name, and why they exist. */
const extensions: Record<string, string> = {
  SessionOrigin:
    "the log's record of session.created (seq 0) with the v2 session record; never on the wire, where " +
    "GET /api/event announces it as the contract's SessionCreated with the v1 record",
  RouteNotFoundError: "foundation error for unknown /api paths; upstream answers those without a typed body",
  UnsupportedMediaTypeError: "a body that is not application/json (415); upstream parses any body as JSON",
  ForbiddenOriginError: "a browser Origin that is not allowed (403); upstream accepts any Origin",
  ForbiddenHostError: "a foreign Host on a loopback listener (403, DNS rebinding); upstream accepts any Host",
  PayloadTooLargeError: "the 413 of a body over server.max_body; upstream has no body limit",
  PathNotFoundError:
    "the 404 of GET /api/fs/read/* and GET /api/fs/list for a missing path; upstream fails those without a typed body",
  JsonValue: "any JSON value (the Instructions work's InstructionEntry values); upstream inlines no such component",
  McpServerInfo: "an MCP server's status (GET /api/mcp, an extension operation); the v2 reference lists no MCP servers",
  GeneratedAgent:
    "the answer of the agent-generation request (POST /api/agent/generate, an extension operation; seed 003)",
  SessionNextTitleUpdated:
    "the hidden title agent's title, durably (issue 14): the v2 contract keeps SessionV2Info.title but has no event changing it",
  SessionNextUsageRecorded:
    "the usage and cost of the compaction and title requests (issue 14): the v2 contract carries usage on step.ended only",
  SessionStepError: "why a Step failed: the contract's SessionErrorUnknown widened (see ContractExtension.widened)"
}

/**
 * Our components whose reference counterpart has another name. The reference names two components
 * after `UnknownError`: its v1 `{name, data}` error, and (deduplicated as `UnknownError1`) the tagged
 * `{_tag, message, ref?}` error that its v2 operations declare, which is the one we serve.
 */
const counterparts: Record<string, string> = { UnknownError: "UnknownError1" }
const counterpart = (component: string): string => counterparts[component] ?? component

// ── Residual differences ──────────────────────────────────────────────────────────────────────────
//
// Each entry names a component and a JSON pointer into its normalized shape. The test asserts that the
// difference is exactly the one described (so a stale entry fails), substitutes the reference value
// there, and then requires the whole shape to be equal.

type Residual =
  | {
      readonly kind: "substitute"
      readonly component: string
      readonly at: string
      /** Where the counterpart sits in the reference shape, when not at `at`. */
      readonly theirsAt?: string
      /** The value at `at` must be the reference component `ours` on our side and `theirs` on theirs. */
      readonly ours: string
      readonly theirs: string
      readonly reason: string
    }
  | { readonly kind: "oneOf"; readonly component: string; readonly at: string; readonly reason: string }
  | {
      readonly kind: "subset"
      readonly component: string
      readonly at: string
      /** `type` literals of our alternatives that the reference union does not have. */
      readonly extensions: ReadonlyArray<string>
      /** Besides the extensions, ours has every member of the reference union (not only some). */
      readonly exact?: boolean
      readonly reason: string
    }

/** Our durable `session.next.*` events that the contract does not have (see `Event`'s extensions). */
const durableExtensions = ["session.next.title.updated", "session.next.usage.recorded"]

const oneOf =
  "JSONSchema.make renders every union as anyOf (the OpenAPI document spells this one oneOf, as the contract " +
  "does: see ApiDocumentation.oneOfUnions). The members are discriminated by their `type` literal, so at most " +
  "one can match and anyOf accepts exactly what oneOf does"

const residuals: ReadonlyArray<Residual> = [
  {
    kind: "subset",
    component: "SessionDurableEvent",
    at: "",
    extensions: durableExtensions,
    exact: true,
    reason: `${oneOf}; our two extension events follow the contract's members`
  },
  {
    kind: "subset",
    component: "SessionHistory",
    at: "/properties/data/items",
    extensions: durableExtensions,
    exact: true,
    reason: `${oneOf}; our two extension events follow the contract's members`
  },
  {
    kind: "subset",
    component: "V2Event",
    at: "",
    extensions: [],
    reason:
      "restricted to what this runtime emits now (session.created, session.updated and session.deleted, every contract " +
      "session.next event, permission and question requests, the stream lifecycle); upstream's other members " +
      "join with their features"
  }
]

const pointer = (at: string) =>
  at
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
const get = (value: Json, at: string): Json => pointer(at).reduce((v, p) => (v === undefined ? v : v[p]), value)
const set = (value: Json, at: string, next: Json): Json => {
  const parts = pointer(at)
  if (parts.length === 0) return next
  const last = parts.pop()!
  const parent = parts.reduce((v, p) => v[p], value)
  parent[last] = next
  return value
}

const typeOf = (alternative: Json): string | undefined => alternative?.properties?.type?.enum?.[0]

const applyResidual = (ours: Json, theirs: Json, r: Residual): Json => {
  const mine = get(ours, r.at)
  const other = get(theirs, r.kind === "substitute" ? (r.theirsAt ?? r.at) : r.at)
  switch (r.kind) {
    case "substitute":
      expect(mine, `${r.component}${r.at}: ours`).toEqual(referenceShape(r.ours))
      expect(other, `${r.component}${r.at}: reference`).toEqual(referenceShape(r.theirs))
      return set(ours, r.at, other)
    case "oneOf":
      expect(mine.oneOf).toBeUndefined()
      expect(Array.isArray(mine.anyOf)).toBe(true)
      expect(Array.isArray(other.oneOf)).toBe(true)
      return set(ours, r.at, { oneOf: mine.anyOf })
    case "subset": {
      const alternatives: Array<Json> = mine.anyOf
      for (const extra of r.extensions) expect(alternatives.map(typeOf)).toContain(extra)
      const kept = alternatives.filter((a) => !r.extensions.includes(typeOf(a) ?? ""))
      // A reference `oneOf` union (see the `oneOf` residual) compares like an `anyOf` one.
      const theirAlternatives: Array<Json> = other.anyOf ?? other.oneOf
      if (r.exact === true) expect(kept.length, `${r.component}: every reference member`).toBe(theirAlternatives.length)
      const index = theirAlternatives.map(key)
      const positions = kept.map((a) => index.indexOf(key(a)))
      for (const [i, at] of positions.entries())
        expect(at, `${r.component}: ${typeOf(kept[i])} is in the reference union`).toBeGreaterThanOrEqual(0)
      // Same relative order as the reference.
      expect(positions).toEqual([...positions].sort((a, b) => a - b))
      return set(ours, r.at, other)
    }
  }
}

describe("reference shapes", () => {
  it("compares every identified export, and each one is either in the contract or a listed extension", () => {
    expect(exported.length).toBeGreaterThan(60)
    const unknown = exported.filter(
      (e) => components[e.component] === undefined && extensions[e.component] === undefined
    )
    expect(unknown.map((e) => `${e.module}.${e.name} (${e.component})`)).toEqual([])
    for (const name of Object.keys(extensions)) {
      expect(components[name]).toBeUndefined()
      expect(exported.map((e) => e.component)).toContain(name)
    }
    for (const r of residuals) expect(exported.map((e) => e.component)).toContain(r.component)
  })

  it("declares Contract Extensions only of contract components, each of them exported here", () => {
    const names = new Set(exported.map((e) => e.component))
    for (const name of Object.keys(ContractExtension.fields)) {
      expect(components[name], `${name} is a contract component`).toBeDefined()
      expect(names).toContain(name)
    }
    for (const [name, widened] of Object.entries(ContractExtension.widened)) {
      expect(extensions[name], `${name} is listed as an extension`).toBeDefined()
      for (const part of [widened.of, ...widened.added]) expect(components[part]).toBeDefined()
    }
  })

  it("covers every member of the contract's durable union and the session.next live deltas", () => {
    const names = new Set(exported.map((e) => e.component))
    const durable = (components.SessionDurableEvent.oneOf as Array<Json>).map((m) =>
      m.$ref.replace("#/components/schemas/", "")
    )
    expect(durable.filter((n) => !names.has(n))).toEqual([])
    const sessionNext = Object.keys(components).filter(
      (n) => n.startsWith("SessionNext") && n !== "SessionNextRetry_error"
    )
    expect(sessionNext.filter((n) => !names.has(n))).toEqual([])
  })

  const compared = [
    ...new Map(
      exported.filter((e) => components[counterpart(e.component)] !== undefined).map((e) => [e.component, e])
    ).values()
  ]

  for (const { module, name, component, schema } of compared) {
    it(`${module}.${name} matches ${counterpart(component)}`, () => {
      const theirs = referenceShape(counterpart(component))
      let ours = ourShape(schema)
      for (const r of residuals.filter((r) => r.component === component)) ours = applyResidual(ours, theirs, r)
      expect(sortKeys(ours)).toEqual(sortKeys(theirs))
    })
  }
})

// ── Round trips ───────────────────────────────────────────────────────────────────────────────────

const { Event, InstanceEvent, SessionMessages, AdmittedPrompt, Agent, ModelInfo, Provider } = Schemas

const sessionID = "ses_dd74ef5eeffe73avBsRqxtP7D1"
const userMessageID = "msg_228b108e4001LbPROD3a9DlRxd"
const assistantMessageID = "msg_228b108e5002Xk9aPq3RtUvWxY"
const model = { id: "gpt-5-mini", providerID: "openai" }
const durable = (seq: number, version = 1) => ({ aggregateID: sessionID, seq, version })
const prompt = {
  text: "Summarize @README.md",
  files: [
    {
      uri: "file:///repo/README.md",
      mime: "text/markdown",
      name: "README.md",
      source: { start: 10, end: 20, text: "@README.md" }
    }
  ]
}
const tokens = { input: 1200, output: 85, reasoning: 0, cache: { read: 1024, write: 0 } }

const events = {
  admitted: {
    id: "evt_228b108e4001AAAAAAAAAAAAA1",
    type: "session.next.prompt.admitted",
    durable: durable(2),
    data: { timestamp: 1764410000000, sessionID, messageID: userMessageID, prompt, delivery: "steer" }
  },
  prompted: {
    id: "evt_228b108e4002AAAAAAAAAAAAA2",
    type: "session.next.prompted",
    durable: durable(3),
    location: { directory: "/repo" },
    data: { timestamp: 1764410000010, sessionID, messageID: userMessageID, prompt, delivery: "steer" }
  },
  contextUpdated: {
    id: "evt_228b108e4003AAAAAAAAAAAAA3",
    type: "session.next.context.updated",
    durable: durable(4),
    data: {
      timestamp: 1764410000011,
      sessionID,
      messageID: "msg_228b108e4003Qq1Rr2Ss3Tt4",
      text: "<system-reminder>AGENTS.md changed</system-reminder>"
    }
  },
  stepStarted: {
    id: "evt_228b108e4004AAAAAAAAAAAAA4",
    type: "session.next.step.started",
    durable: durable(5),
    data: { timestamp: 1764410000012, sessionID, assistantMessageID, agent: "build", model }
  },
  textStarted: {
    id: "evt_228b108e4005AAAAAAAAAAAAA5",
    type: "session.next.text.started",
    durable: durable(6),
    data: { timestamp: 1764410000100, sessionID, assistantMessageID, textID: "txt_0" }
  },
  textEnded: {
    id: "evt_228b108e4006AAAAAAAAAAAAA6",
    type: "session.next.text.ended",
    durable: durable(7),
    data: {
      timestamp: 1764410000400,
      sessionID,
      assistantMessageID,
      textID: "txt_0",
      text: "The README describes the build."
    }
  },
  toolInputStarted: {
    id: "evt_228b108e4007AAAAAAAAAAAAA7",
    type: "session.next.tool.input.started",
    durable: durable(8),
    data: { timestamp: 1764410000401, sessionID, assistantMessageID, callID: "call_1", name: "read" }
  },
  toolInputEnded: {
    id: "evt_228b108e4008AAAAAAAAAAAAA8",
    type: "session.next.tool.input.ended",
    durable: durable(9),
    data: { timestamp: 1764410000402, sessionID, assistantMessageID, callID: "call_1", text: '{"path":"README.md"}' }
  },
  toolCalled: {
    id: "evt_228b108e4009AAAAAAAAAAAAA9",
    type: "session.next.tool.called",
    durable: durable(10),
    data: {
      timestamp: 1764410000403,
      sessionID,
      assistantMessageID,
      callID: "call_1",
      tool: "read",
      input: { path: "README.md" },
      provider: { executed: false }
    }
  },
  toolSuccess: {
    id: "evt_228b108e400aAAAAAAAAAAAAAA",
    type: "session.next.tool.success",
    durable: durable(11),
    data: {
      timestamp: 1764410000450,
      sessionID,
      assistantMessageID,
      callID: "call_1",
      structured: { lines: 42 },
      content: [{ type: "text", text: "# Project\n..." }],
      result: { truncated: false },
      provider: { executed: false }
    }
  },
  toolFailed: {
    id: "evt_228b108e400bAAAAAAAAAAAAAB",
    type: "session.next.tool.failed",
    durable: durable(12),
    data: {
      timestamp: 1764410000460,
      sessionID,
      assistantMessageID,
      callID: "call_2",
      error: { type: "unknown", message: "interrupted" },
      provider: { executed: false }
    }
  },
  stepEnded: {
    id: "evt_228b108e400cAAAAAAAAAAAAAC",
    type: "session.next.step.ended",
    durable: durable(13, 2),
    metadata: { traceID: "4bf92f3577b34da6" },
    data: { timestamp: 1764410000500, sessionID, assistantMessageID, finish: "tool-calls", cost: 0.00042, tokens }
  },
  stepFailed: {
    id: "evt_228b108e400dAAAAAAAAAAAAAD",
    type: "session.next.step.failed",
    durable: durable(14, 2),
    data: {
      timestamp: 1764410000600,
      sessionID,
      assistantMessageID,
      error: { type: "unknown", message: "context overflow" }
    }
  },
  reasoningEnded: {
    id: "evt_228b108e400eAAAAAAAAAAAAAE",
    type: "session.next.reasoning.ended",
    durable: durable(15),
    data: {
      timestamp: 1764410000700,
      sessionID,
      assistantMessageID,
      reasoningID: "rs_0",
      text: "Need to read the file first.",
      providerMetadata: { anthropic: { signature: "EqQBCkYIBxgCKkD..." } }
    }
  },
  retried: {
    id: "evt_228b108e400fAAAAAAAAAAAAAF",
    type: "session.next.retried",
    durable: durable(16),
    data: {
      timestamp: 1764410000800,
      sessionID,
      attempt: 1,
      error: {
        message: "Service Unavailable",
        statusCode: 503,
        isRetryable: true,
        responseHeaders: { "retry-after": "1" }
      }
    }
  },
  agentSwitched: {
    id: "evt_228b108e4010AAAAAAAAAAAAAG",
    type: "session.next.agent.switched",
    durable: durable(17),
    data: { timestamp: 1764410000900, sessionID, messageID: "msg_228b108e4010Aa1Bb2Cc3Dd4", agent: "plan" }
  }
} as const

const deltas = {
  text: {
    id: "evt_228b108e4011AAAAAAAAAAAAAH",
    type: "session.next.text.delta",
    data: { timestamp: 1764410000200, sessionID, assistantMessageID, textID: "txt_0", delta: "The README" }
  },
  reasoning: {
    id: "evt_228b108e4012AAAAAAAAAAAAAI",
    type: "session.next.reasoning.delta",
    data: { timestamp: 1764410000201, sessionID, assistantMessageID, reasoningID: "rs_0", delta: "Need to" }
  },
  toolInput: {
    id: "evt_228b108e4013AAAAAAAAAAAAAJ",
    type: "session.next.tool.input.delta",
    data: { timestamp: 1764410000202, sessionID, assistantMessageID, callID: "call_1", delta: '{"pa' }
  }
} as const

const roundTrip = <A, I>(schema: Schema.Schema<A, I, never>, value: unknown): A => {
  const wire = JSON.parse(JSON.stringify(value))
  const decoded = Schema.decodeUnknownSync(schema, { onExcessProperty: "error" })(wire)
  expect(JSON.parse(JSON.stringify(Schema.encodeSync(schema)(decoded)))).toEqual(wire)
  return decoded
}

describe("round trips", () => {
  it("every durable example decodes through SessionDurableEvent and encodes back unchanged", () => {
    for (const event of Object.values(events)) {
      const decoded = roundTrip(Event.SessionDurableEvent, event)
      expect(decoded.type).toBe(event.type)
      expect(Event.durableVersion[decoded.type]).toBe(event.durable.version)
    }
  })

  it("each example also decodes with its own member schema", () => {
    roundTrip(Event.SessionNextPromptAdmitted, events.admitted)
    roundTrip(Event.SessionNextPrompted, events.prompted)
    roundTrip(Event.SessionNextStepStarted, events.stepStarted)
    roundTrip(Event.SessionNextTextEnded, events.textEnded)
    roundTrip(Event.SessionNextToolCalled, events.toolCalled)
    roundTrip(Event.SessionNextToolSuccess, events.toolSuccess)
    roundTrip(Event.SessionNextStepEnded, events.stepEnded)
    roundTrip(Event.SessionNextRetried, events.retried)
  })

  it("omits absent optional keys when encoding", () => {
    const encoded = Schema.encodeSync(Event.SessionNextStepStarted)(
      Schema.decodeUnknownSync(Event.SessionNextStepStarted)(events.stepStarted)
    )
    expect(Object.keys(encoded).sort()).toEqual(["data", "durable", "id", "type"])
    expect(Object.keys(encoded.data).sort()).toEqual(["agent", "assistantMessageID", "model", "sessionID", "timestamp"])
  })

  it("keeps live-only deltas out of the durable union, and session.created only in the log union", () => {
    for (const delta of Object.values(deltas)) {
      expect(() => Schema.decodeUnknownSync(Event.SessionDurableEvent)(delta)).toThrow()
      expect(roundTrip(Event.SessionLiveEvent, delta).type).toBe(delta.type)
      expect(roundTrip(InstanceEvent.V2Event, delta).type).toBe(delta.type)
    }
    const created = {
      id: "evt_228b108e4000AAAAAAAAAAAAA0",
      type: "session.created",
      durable: durable(1),
      data: {
        sessionID,
        info: {
          id: sessionID,
          projectID: "p1",
          cost: 0,
          tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
          time: { created: 1, updated: 1 },
          title: "New session",
          location: { directory: "/repo" }
        }
      }
    }
    expect(() => Schema.decodeUnknownSync(Event.SessionDurableEvent)(created)).toThrow()
    expect(roundTrip(Event.SessionLogEvent, created).type).toBe("session.created")
    expect(roundTrip(Event.SessionHistory, { data: Object.values(events), hasMore: false }).data).toHaveLength(
      Object.values(events).length
    )
  })

  it("rejects the contract's violations: a msg id without underscore, a non-object tool input, a missing field", () => {
    const bad = [
      { ...events.admitted, data: { ...events.admitted.data, messageID: "msg228b108e4001" } },
      { ...events.toolCalled, data: { ...events.toolCalled.data, input: ["README.md"] } },
      { ...events.stepEnded, data: { ...events.stepEnded.data, tokens: undefined } },
      { ...events.admitted, data: { ...events.admitted.data, delivery: "later" } }
    ]
    for (const event of bad) expect(() => Schema.decodeUnknownSync(Event.SessionDurableEvent)(event)).toThrow()
  })

  it("the instance stream's lifecycle events carry empty data; there is no heartbeat event", () => {
    const event = <T extends string>(type: T) => ({ id: "evt_228b108e4020AAAAAAAAAAAAAK", type, data: {} })
    expect(roundTrip(InstanceEvent.ServerConnected, event("server.connected"))).toEqual(event("server.connected"))
    expect(roundTrip(InstanceEvent.GlobalDisposed, event("global.disposed"))).toEqual(event("global.disposed"))
    for (const type of ["server.connected", "global.disposed"]) {
      expect(roundTrip(InstanceEvent.V2Event, event(type)).type).toBe(type)
    }
    expect(() => Schema.decodeUnknownSync(InstanceEvent.V2Event)(event("server.heartbeat"))).toThrow()
  })

  it("the live stream's session.created and session.updated carry the v1 record made from the v2 one", () => {
    const info = {
      id: sessionID,
      projectID: "p1",
      agent: "build",
      model,
      cost: 0.5,
      tokens,
      time: { created: 1, updated: 2 },
      title: "Reading the README",
      location: { directory: "/repo", workspaceID: "wrk_1" },
      subpath: "packages/app"
    }
    const decoded = Schema.decodeUnknownSync(Schemas.Session.SessionV2Info)(info)
    const legacy = Schemas.LegacySession.fromV2(decoded, "0.1.0")
    expect(legacy).toEqual({
      id: sessionID,
      slug: sessionID,
      projectID: "p1",
      workspaceID: "wrk_1",
      directory: "/repo",
      path: "packages/app",
      cost: 0.5,
      tokens,
      title: "Reading the README",
      agent: "build",
      model,
      version: "0.1.0",
      time: { created: 1, updated: 2 }
    })
    for (const type of ["session.created", "session.updated"]) {
      const event = {
        id: "evt_228b108e4021AAAAAAAAAAAAAL",
        type,
        location: { directory: "/repo" },
        data: { sessionID, info: legacy }
      }
      expect(roundTrip(InstanceEvent.V2Event, event).type).toBe(type)
    }
    const v2 = { id: "evt_228b108e4021AAAAAAAAAAAAAL", type: "session.created", data: { sessionID, info } }
    expect(() => Schema.decodeUnknownSync(InstanceEvent.V2Event)(v2)).toThrow()
  })

  it("admission and session messages", () => {
    roundTrip(AdmittedPrompt.PromptInput, { text: "hi", files: [{ uri: "file:///a.png" }], agents: [{ name: "plan" }] })
    roundTrip(AdmittedPrompt.SessionInputAdmitted, {
      admittedSeq: 2,
      id: userMessageID,
      sessionID,
      prompt,
      delivery: "queue",
      timeCreated: 1764410000000
    })
    const messages = [
      { id: userMessageID, time: { created: 1764410000010 }, text: prompt.text, files: prompt.files, type: "user" },
      {
        id: "msg_228b108e4003Qq1Rr2Ss3Tt4",
        time: { created: 1764410000011 },
        type: "system",
        text: "AGENTS.md changed"
      },
      {
        id: assistantMessageID,
        time: { created: 1764410000012, completed: 1764410000500 },
        type: "assistant",
        agent: "build",
        model,
        content: [
          {
            type: "reasoning",
            id: "rs_0",
            text: "Need to read the file first.",
            providerMetadata: { anthropic: { signature: "EqQB" } }
          },
          { type: "text", id: "txt_0", text: "Reading it." },
          {
            type: "tool",
            id: "call_1",
            name: "read",
            provider: { executed: false },
            state: {
              status: "completed",
              input: { path: "README.md" },
              content: [{ type: "text", text: "# Project" }],
              structured: {}
            },
            time: { created: 1764410000403, ran: 1764410000404, completed: 1764410000450 }
          },
          {
            type: "tool",
            id: "call_2",
            name: "bash",
            state: { status: "pending", input: '{"comm' },
            time: { created: 1764410000460 }
          }
        ],
        finish: "tool-calls",
        cost: 0.00042,
        tokens
      },
      { id: "msg_228b108e4010Aa1Bb2Cc3Dd4", time: { created: 1764410000900 }, type: "agent-switched", agent: "plan" },
      {
        type: "compaction",
        reason: "auto",
        summary: "Earlier: read README.",
        recent: "",
        id: "msg_228b108e4030Ee5Ff6Gg7Hh8",
        time: { created: 1764410001000 }
      }
    ]
    const page = roundTrip(SessionMessages.SessionMessagesResponse, {
      data: messages,
      cursor: { next: "eyJhbmNob3IiOiJtc2dfMSJ9" }
    })
    expect(page.data.map((m) => m.type)).toEqual(["user", "system", "assistant", "agent-switched", "compaction"])
  })

  it("agent, model and provider info", () => {
    roundTrip(Agent.AgentV2Info, {
      id: "build",
      request: { headers: {}, body: {} },
      mode: "primary",
      hidden: false,
      color: "#3b82f6",
      steps: 50,
      permissions: [{ action: "bash", resource: "*", effect: "ask" }]
    })
    expect(() =>
      Schema.decodeUnknownSync(Agent.AgentV2Info)({
        id: "x",
        request: { headers: {}, body: {} },
        mode: "primary",
        hidden: false,
        steps: 0,
        permissions: []
      })
    ).toThrow()
    roundTrip(ModelInfo.ModelV2Info, {
      id: "gpt-5-mini",
      providerID: "openai",
      name: "GPT-5 mini",
      api: {
        id: "gpt-5-mini",
        type: "native",
        url: "https://api.openai.com/v1",
        settings: { protocol: "openai-chat" }
      },
      capabilities: { tools: true, input: ["text", "image"], output: ["text"] },
      request: { headers: {}, body: {} },
      variants: [],
      time: { released: 1754524800000 },
      cost: [{ input: 0.25, output: 2, cache: { read: 0.025, write: 0 } }],
      status: "active",
      enabled: true,
      limit: { context: 400000, output: 128000 }
    })
    roundTrip(Provider.ProviderV2Info, {
      id: "openai",
      name: "OpenAI",
      api: { type: "native", url: "https://api.openai.com/v1", settings: {} },
      request: { headers: { "x-team": "core" }, body: {} }
    })
  })
})
