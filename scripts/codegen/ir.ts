export * as SdkContract from "./ir.js"

import type { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { HttpApi, HttpMethod, OpenApi } from "@effect/platform"
import { SchemaAST as AST, Context, JSONSchema, Option } from "effect"
import { ClientProjection } from "../../packages/protocol/src/client-projection.js"
import { EventStream } from "../../packages/protocol/src/event-stream.js"
import { JsonSchema } from "./json-schema.js"

/**
 * The SDK Contract IR: the public HttpApi compiled once into plain JSON that every SDK emitter reads.
 *
 * Schemas are JSON Schema (OpenAPI 3.1 dialect) of the *encoded* (wire) form, taken from the same
 * `OpenApi.fromApi` document the server publishes, with `$ref`s into {@link Contract.components}.
 * Path and query parameters also carry the JSON Schema of their *decoded* form, because the URL
 * encoding (always strings) is where wire and domain values differ most (`limit` is `"10"` on the
 * wire and `10` decoded). Decoded schemas reference {@link Contract.decodedComponents}. Brands and
 * class identities are not expressible in JSON Schema: an emitter that needs them (the Effect
 * emitter) imports the authoritative schemas from Protocol and uses the IR for structure only.
 *
 * The builder guarantees, for every operation, that the wire field names equal the decoded field
 * names, so one input object shape serves every emitter: path parameters, query parameters (a
 * deepObject parameter counts once, under its object name) and body fields never share a name.
 */
export interface Contract {
  /** Bumped when the shape of this document changes incompatibly. */
  readonly irVersion: 2
  readonly api: { readonly title: string; readonly version: string }
  /** In declaration order: groups as added to the API, endpoints as added to their group. */
  readonly operations: ReadonlyArray<Operation>
  /** Encoded schemas referenced (transitively) by any operation, by name. */
  readonly components: Readonly<Record<string, JsonSchema.Schema>>
  /** Decoded schemas referenced by any `decoded` parameter schema, by name. */
  readonly decodedComponents: Readonly<Record<string, JsonSchema.Schema>>
}

export interface Operation {
  /**
   * The consumer-facing namespace of the generated clients (`sessions`), from the group's explicit
   * `ClientProjection.Namespace` annotation, never from its identifier.
   */
  readonly namespace: string
  /** The HttpApi group identifier (`sessions`): how an emitter addresses the endpoint in the HttpApi. */
  readonly group: string
  /** The method within the namespace: the endpoint name (`get`). */
  readonly name: string
  /** From the `OpenApi.Identifier` annotation (`v2.session.get`); `<group>.<name>` when absent. */
  readonly operationId: string
  /** The endpoint's OpenAPI description (or summary), when annotated. */
  readonly description: string | null
  readonly method: HttpMethod.HttpMethod
  /**
   * The path template with `{name}` placeholders, as in OpenAPI (`/api/session/{sessionID}`). A path
   * ending in the router wildcard `*` (`/api/fs/read/*`) ends in `{path}` instead: the {@link restParameter}.
   */
  readonly path: string
  readonly pathParams: ReadonlyArray<Parameter>
  readonly queryParams: ReadonlyArray<QueryParameter>
  readonly body: Body | null
  readonly success: Success
  /** Declared failures, by status then tag. Includes API-wide and middleware failures. */
  readonly errors: ReadonlyArray<DeclaredError>
  /** `none`: one JSON (or empty) response. `sse`: the success is a `text/event-stream`. */
  readonly streaming: "none" | "sse"
  /** For `sse`: how the stream's events travel; `null` otherwise. */
  readonly stream: Stream | null
  /** For a cursor-paged list (the `ClientProjection.Page` annotation): its Page projection; `null` otherwise. */
  readonly page: Page | null
}

/**
 * The Page projection of a cursor-paged list. The wire stays the list envelope `{data, cursor:
 * {previous?, next?}}`; clients present it as a Page `{items, previous?, next?}` (the cursors being
 * opaque links to the neighbouring pages of the same query) and split the input in two: an initial
 * query and a continuation. Path parameters belong to both.
 */
export interface Page {
  /** The success member holding the page's items, an array (`data`). */
  readonly items: string
  /** The success member holding the `{previous?, next?}` cursor links (`cursor`). */
  readonly links: string
  /** The query parameter a continuation sends its cursor in (`cursor`). */
  readonly cursor: string
  /** The query parameters of an initial query: every query parameter but {@link cursor}, in order. */
  readonly initial: ReadonlyArray<string>
  /** The query parameters a continuation may send besides its cursor (`limit`), in order. */
  readonly continuation: ReadonlyArray<string>
  /** The generated method that walks the pages forward from an initial query (`listPages`). */
  readonly pages: string
}

/**
 * A Server-Sent Events stream (see `EventStream` in Protocol). Each event is one SSE frame whose
 * `event:` is the event's type and whose `data:` is the event as JSON; comment lines are heartbeats.
 */
export interface Stream {
  /**
   * `frames`: frames also carry `id:`, the resume position (`Last-Event-ID`); the success schema is
   * the frame `{id, event, data}`. `events`: frames carry no id; the success schema is the event.
   */
  readonly framing: "frames" | "events"
  /** The encoded schema of one event: each frame's `data`, parsed as JSON. */
  readonly event: JsonSchema.Schema
  /** The `event:` name of the terminal frame a server sends when the stream fails. */
  readonly failureEvent: string
}

export interface Parameter {
  readonly name: string
  /**
   * Only on the {@link restParameter}: the value is the rest of the path, `/`-separated, sent
   * percent-encoded as one segment (slashes as `%2F`, so URL normalization never applies its `..`).
   */
  readonly rest?: true
  readonly required: boolean
  /** The encoded (URL string) schema. */
  readonly schema: JsonSchema.Schema
  /** The decoded schema of the same field. */
  readonly decoded: JsonSchema.Schema
}

/**
 * A query parameter. `form`: `name=value`. `deepObject`: an object whose members travel as
 * `name[member]=value`; its `schema` is an object schema whose properties are the members' encoded schemas.
 */
export interface QueryParameter extends Parameter {
  readonly style: "form" | "deepObject"
}

export interface Body {
  readonly contentType: string
  /** Whether the request must carry a body (it may still be `{}` when every field is optional). */
  readonly required: boolean
  /** An object schema (possibly a `$ref` to one): its properties are the body fields. */
  readonly schema: JsonSchema.Schema
}

export interface Success {
  readonly status: number
  /** `null` when the response has no body. */
  readonly contentType: string | null
  readonly schema: JsonSchema.Schema | null
  /**
   * `"data"` when the body is an envelope whose only property is `data`: clients return the
   * member. Any other shape (including `{data, cursor}` pages) is returned whole (`null`).
   */
  readonly unwrap: "data" | null
}

export interface DeclaredError {
  readonly status: number
  /** The `_tag` literal that identifies the failure in the body. */
  readonly tag: string
  readonly schema: JsonSchema.Schema
}

interface Reflected {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>
}

interface OpenApiOperation {
  readonly operationId: string
  readonly description?: string
  readonly summary?: string
  readonly parameters: ReadonlyArray<{
    readonly name: string
    readonly in: string
    readonly required: boolean
    readonly style?: string
    readonly schema: JsonSchema.Json
  }>
  readonly requestBody?: {
    readonly required?: boolean
    readonly content: Readonly<Record<string, { readonly schema: JsonSchema.Json }>>
  }
  readonly responses: Readonly<
    Record<
      string,
      {
        readonly content?: Readonly<
          Record<string, { readonly schema: JsonSchema.Json; readonly "x-effect-stream"?: JsonSchema.Json }>
        >
      }
    >
  >
}

/**
 * The path parameter of a route ending in the wildcard `*`: OpenAPI documents no parameter for it (the
 * reference contract writes the path as `/api/fs/read/*`), and the server reads the rest of the path.
 */
export const restParameter: Parameter = {
  name: "path",
  required: true,
  schema: {
    type: "string",
    description:
      "The path after the operation's prefix, `/`-separated (`src/index.ts`), relative to the Location directory."
  },
  decoded: { type: "string" },
  rest: true
}

const deepObjectKey = /^([^[\]]+)\[([^[\]]+)\]$/

/**
 * Compiles `api` into the IR. Throws (naming the operation) when the API uses something the IR cannot
 * represent faithfully: header parameters, a GET payload, several success statuses or body content
 * types, a non-object body, untagged declared errors, fields renamed between encoded and decoded form,
 * or an input name shared by two of path, query and body.
 */
export const fromApi = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): Contract => {
  const document = OpenApi.fromApi(api) as unknown as {
    readonly info: { readonly title: string; readonly version: string }
    readonly paths: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>
    readonly components: { readonly schemas: JsonSchema.Components }
  }
  const components = document.components.schemas
  const decodedComponents: Record<string, JsonSchema.Schema> = {}

  const reflected: Array<Reflected> = []
  HttpApi.reflect(api, {
    onGroup: ({ group }) => {
      if (Option.isNone(Context.getOption(group.annotations, ClientProjection.Namespace))) {
        throw new Error(
          `group ${group.identifier}: no ClientProjection.Namespace annotation; every group states its client namespace explicitly`
        )
      }
    },
    onEndpoint: ({ endpoint, group, mergedAnnotations }) => {
      if (!Context.get(mergedAnnotations, OpenApi.Exclude)) reflected.push({ group, endpoint })
    }
  })

  const operations = reflected.map(({ group, endpoint }) => {
    const where = `${group.identifier}.${endpoint.name}`
    const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
    const op = document.paths[path]?.[endpoint.method.toLowerCase()]
    if (op === undefined) throw new Error(`${where}: no OpenAPI operation for ${endpoint.method} ${path}`)
    if (op.parameters.some((parameter) => parameter.in === "header")) {
      throw new Error(`${where}: header parameters are not represented in the SDK Contract IR`)
    }
    if (!HttpMethod.hasBody(endpoint.method) && Option.isSome(endpoint.payloadSchema)) {
      throw new Error(
        `${where}: a ${endpoint.method} payload is not represented in the SDK Contract IR; use setUrlParams`
      )
    }

    const decodedPath = decodedProperties(endpoint.pathSchema, decodedComponents)
    const wirePath = op.parameters.filter((parameter) => parameter.in === "path")
    sameNames(
      where,
      "path parameters",
      wirePath.map((p) => p.name),
      [...decodedPath.keys()]
    )
    const rest = endpoint.path.endsWith("/*")
    const pathParams = [
      ...wirePath.map(
        (parameter): Parameter => ({
          name: parameter.name,
          required: parameter.required,
          schema: canonical(JsonSchema.asSchema(parameter.schema, `${where} path ${parameter.name}`)),
          decoded: canonical(decodedField(decodedPath, parameter.name, `${where} path`))
        })
      ),
      ...(rest ? [restParameter] : [])
    ]

    const decodedQuery = decodedProperties(endpoint.urlParamsSchema, decodedComponents)
    const queryParams = queryParameters(
      where,
      op.parameters.filter((parameter) => parameter.in === "query"),
      decodedQuery,
      decodedComponents
    )

    const body = requestBody(where, op, components)
    if (body !== null) {
      const payload = Option.getOrThrow(endpoint.payloadSchema)
      const wire = JsonSchema.properties(JsonSchema.resolve(body.schema, components)).map(([name]) => name)
      sameNames(where, "body fields", wire, decodedFieldNames(payload.ast, where))
    }

    const inputs = [
      ...pathParams.map((p) => [p.name, "path parameter"] as const),
      ...queryParams.map((p) => [p.name, "query parameter"] as const),
      ...(body === null
        ? []
        : JsonSchema.properties(JsonSchema.resolve(body.schema, components)).map(
            ([name]) => [name, "body field"] as const
          ))
    ]
    const seen = new Map<string, string>()
    for (const [name, kind] of inputs) {
      const previous = seen.get(name)
      if (previous !== undefined) {
        throw new Error(`${where}: input name collision: "${name}" is both a ${previous} and a ${kind}`)
      }
      seen.set(name, kind)
    }

    const success = successResponse(where, op, components)
    const streaming = success.contentType === EventStream.contentType ? "sse" : "none"
    const stream = streamOf(where, endpoint, op, success, components)
    if ((stream === null) !== (streaming === "none")) {
      throw new Error(
        stream === null
          ? `${where}: a text/event-stream success needs the EventStream annotation (Protocol's EventStream helpers)`
          : `${where}: an EventStream endpoint must succeed with text/event-stream`
      )
    }
    const operation: Operation = {
      namespace: Option.getOrThrow(Context.getOption(group.annotations, ClientProjection.Namespace)),
      group: group.identifier,
      name: endpoint.name,
      operationId: op.operationId,
      description: op.description ?? op.summary ?? null,
      method: endpoint.method,
      path: rest ? `${path.slice(0, -1)}{${restParameter.name}}` : path,
      pathParams,
      queryParams,
      body,
      success,
      errors: declaredErrors(where, op, components),
      streaming,
      stream,
      page: pageOf(where, endpoint, queryParams, success, components)
    }
    return operation
  })

  const expected = Object.values(document.paths).reduce((n, methods) => n + Object.keys(methods).length, 0)
  if (expected !== operations.length) {
    throw new Error(`the OpenAPI document has ${expected} operations but reflection found ${operations.length}`)
  }
  const methods = new Map<string, string>()
  for (const operation of operations) {
    const where = `${operation.group}.${operation.name}`
    for (const method of [operation.name, ...(operation.page === null ? [] : [operation.page.pages])]) {
      const key = `${operation.namespace}.${method}`
      const other = methods.get(key)
      if (other !== undefined) throw new Error(`client method ${key} is claimed by both ${other} and ${where}`)
      methods.set(key, where)
    }
  }
  const ids = new Map<string, string>()
  for (const operation of operations) {
    const other = ids.get(operation.operationId)
    if (other !== undefined) {
      throw new Error(
        `operationId ${operation.operationId} is used by both ${other} and ${operation.group}.${operation.name}`
      )
    }
    ids.set(operation.operationId, `${operation.group}.${operation.name}`)
  }

  const used = JsonSchema.reachable(
    operations.flatMap((o) => [
      ...[...o.pathParams, ...o.queryParams].map((p) => p.schema),
      ...(o.body === null ? [] : [o.body.schema]),
      ...(o.success.schema === null ? [] : [o.success.schema]),
      ...o.errors.map((e) => e.schema)
    ]),
    components
  )
  const decodedUsed = JsonSchema.reachable(
    operations.flatMap((o) => [...o.pathParams, ...o.queryParams].map((p) => p.decoded)),
    decodedComponents
  )
  return {
    irVersion: 2,
    api: { title: document.info.title, version: document.info.version },
    operations,
    components: pick(components, used),
    decodedComponents: pick(decodedComponents, decodedUsed)
  }
}

/** The IR as checked in: two-space JSON with a final newline. */
export const serialize = (contract: Contract): string => `${JSON.stringify(contract, null, 2)}\n`

const pick = (from: JsonSchema.Components, names: ReadonlySet<string>): Record<string, JsonSchema.Schema> => {
  const out: Record<string, JsonSchema.Schema> = {}
  for (const name of [...names].sort()) out[name] = canonical(from[name] as JsonSchema.Schema)
  return out
}

/** The decoded JSON Schema of each field of a parameter struct, by field name. */
const decodedProperties = (
  schema: Option.Option<{ readonly ast: AST.AST }>,
  definitions: Record<string, JsonSchema.Schema>
): ReadonlyMap<string, JsonSchema.Schema> => {
  if (Option.isNone(schema)) return new Map()
  const jsonSchema = JSONSchema.fromAST(AST.typeAST(schema.value.ast), {
    definitions: definitions as unknown as Record<string, JSONSchema.JsonSchema7>,
    definitionPath: JsonSchema.refPrefix,
    target: "openApi3.1"
  }) as unknown as JsonSchema.Schema
  return new Map(JsonSchema.properties(JsonSchema.resolve(jsonSchema, definitions)))
}

const decodedField = (decoded: ReadonlyMap<string, JsonSchema.Schema>, name: string, where: string) => {
  const schema = decoded.get(name)
  if (schema === undefined) throw new Error(`${where}: "${name}" has no decoded counterpart`)
  return schema
}

const sameNames = (where: string, what: string, wire: ReadonlyArray<string>, decoded: ReadonlyArray<string>) => {
  const a = [...wire].sort().join(", ")
  const b = [...decoded].sort().join(", ")
  if (a !== b)
    throw new Error(
      `${where}: ${what} are named [${a}] on the wire but [${b}] decoded; renamed fields are not supported`
    )
}

/** Field names of the decoded side of a struct-like schema (struct, class, refinement or transformation of one). */
const decodedFieldNames = (ast: AST.AST, where: string): ReadonlyArray<string> => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.propertySignatures.map((signature) => String(signature.name))
    case "Refinement":
      return decodedFieldNames(ast.from, where)
    case "Suspend":
      return decodedFieldNames(ast.f(), where)
    case "Transformation":
      // A Schema.Class is a transformation from its fields struct to an opaque declaration.
      return ast.to._tag === "Declaration"
        ? decodedFieldNames(AST.typeAST(ast.from), where)
        : decodedFieldNames(ast.to, where)
    default:
      throw new Error(`${where}: the payload must be a struct, found ${ast._tag}`)
  }
}

const queryParameters = (
  where: string,
  parameters: OpenApiOperation["parameters"],
  decoded: ReadonlyMap<string, JsonSchema.Schema>,
  decodedComponents: JsonSchema.Components
): ReadonlyArray<QueryParameter> => {
  // Bracketed keys (`location[directory]`) are members of one deepObject parameter (`location`).
  const out: Array<{ name: string; style: "form" | "deepObject"; required: boolean; schema: JsonSchema.Schema }> = []
  const members = new Map<string, Array<readonly [string, JsonSchema.Schema, boolean]>>()
  const add = (name: string, style: "form" | "deepObject", required: boolean, schema: JsonSchema.Schema) => {
    if (out.some((p) => p.name === name)) {
      throw new Error(`${where}: input name collision: query parameter "${name}" is declared twice`)
    }
    out.push({ name, style, required, schema })
  }
  for (const parameter of parameters) {
    const schema = JsonSchema.asSchema(parameter.schema, `${where} query ${parameter.name}`)
    const match = deepObjectKey.exec(parameter.name)
    if (match === null) {
      add(parameter.name, parameter.style === "deepObject" ? "deepObject" : "form", parameter.required, schema)
      continue
    }
    const [, name, member] = match as unknown as [string, string, string]
    let group = members.get(name)
    if (group === undefined) {
      group = []
      members.set(name, group)
      // The object takes the position of its first member, so declared order is kept.
      add(name, "deepObject", false, {})
    }
    group.push([member, schema, parameter.required])
  }
  sameNames(
    where,
    "query parameters",
    out.map((p) => p.name),
    [...decoded.keys()]
  )
  return out.map((parameter): QueryParameter => {
    const group = members.get(parameter.name)
    const schema =
      group === undefined
        ? parameter.schema
        : {
            type: "object",
            required: group.filter(([, , isRequired]) => isRequired).map(([n]) => n),
            properties: Object.fromEntries(group.map(([n, s]) => [n, s])),
            additionalProperties: false
          }
    const decodedSchema = decodedField(decoded, parameter.name, `${where} query`)
    if (parameter.style === "deepObject") {
      sameNames(
        `${where} query ${parameter.name}`,
        "members",
        JsonSchema.properties(schema).map(([n]) => n),
        JsonSchema.properties(JsonSchema.resolve(decodedSchema, decodedComponents)).map(([n]) => n)
      )
    }
    return {
      name: parameter.name,
      style: parameter.style,
      required: group === undefined ? parameter.required : JsonSchema.required(schema).size > 0,
      schema: canonical(schema),
      decoded: canonical(decodedSchema)
    }
  })
}

const canonical = (schema: JsonSchema.Schema): JsonSchema.Schema => JsonSchema.canonical(schema) as JsonSchema.Schema

const requestBody = (where: string, op: OpenApiOperation, components: JsonSchema.Components): Body | null => {
  if (op.requestBody === undefined) return null
  const types = Object.keys(op.requestBody.content)
  if (types.length !== 1) throw new Error(`${where}: expected one request content type, found [${types.join(", ")}]`)
  const contentType = types[0] as string
  const schema = JsonSchema.asSchema(op.requestBody.content[contentType]?.schema, `${where} body`)
  const resolved = JsonSchema.resolve(schema, components)
  if (resolved.type !== "object") {
    throw new Error(`${where}: the body must be an object schema so its fields can join the input`)
  }
  return { contentType, required: op.requestBody.required === true, schema: canonical(schema) }
}

const successResponse = (where: string, op: OpenApiOperation, components: JsonSchema.Components): Success => {
  const statuses = Object.keys(op.responses).filter((status) => /^2\d\d$/.test(status))
  if (statuses.length !== 1) throw new Error(`${where}: expected one success status, found [${statuses.join(", ")}]`)
  const status = statuses[0] as string
  const content = op.responses[status]?.content ?? {}
  const types = Object.keys(content)
  if (types.length > 1) throw new Error(`${where}: expected one success content type, found [${types.join(", ")}]`)
  const contentType = types[0] ?? null
  const schema = contentType === null ? null : JsonSchema.asSchema(content[contentType]?.schema, `${where} success`)
  return {
    status: Number(status),
    contentType,
    schema: schema === null ? null : canonical(schema),
    unwrap: isDataEnvelope(schema, components) ? "data" : null
  }
}

/** The stream of an endpoint with an `EventStream` annotation, read from its success schema. */
const streamOf = (
  where: string,
  endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>,
  op: OpenApiOperation,
  success: Success,
  components: JsonSchema.Components
): Stream | null => {
  const declaration = EventStream.declarationOf(endpoint)
  if (declaration === undefined || success.schema === null || success.contentType === null) return null
  const extension = op.responses[String(success.status)]?.content?.[success.contentType]?.["x-effect-stream"]
  const failureEvent =
    JsonSchema.isObject(extension) && typeof extension.failureEvent === "string" ? extension.failureEvent : null
  if (failureEvent === null)
    throw new Error(`${where}: the stream's OpenAPI content has no x-effect-stream failureEvent`)
  if (declaration.framing === "events") return { framing: "events", event: success.schema, failureEvent }
  const frame = JsonSchema.resolve(success.schema, components)
  const fields = JsonSchema.properties(frame)
  const data = fields.find(([name]) => name === "data")?.[1]
  const content = data === undefined ? undefined : JsonSchema.resolve(data, components).contentSchema
  if (
    fields
      .map(([name]) => name)
      .sort()
      .join(",") !== "data,event,id" ||
    content === undefined
  ) {
    throw new Error(`${where}: a framed stream's success must be the frame {id, event, data} with data's contentSchema`)
  }
  return { framing: "frames", event: canonical(JsonSchema.asSchema(content, `${where} stream event`)), failureEvent }
}

/**
 * The Page projection of an endpoint annotated `ClientProjection.Page`, checked against the list
 * envelope convention: the success is `{data: array, cursor: {previous?: string, next?: string}}`
 * returned whole, the query has an optional `cursor`, and a continuation's extra parameters are
 * query parameters other than it.
 */
const pageOf = (
  where: string,
  endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>,
  queryParams: ReadonlyArray<QueryParameter>,
  success: Success,
  components: JsonSchema.Components
): Page | null => {
  const spec = Context.getOption(endpoint.annotations, ClientProjection.Page)
  if (Option.isNone(spec)) return null
  const fail = (why: string): never => {
    throw new Error(`${where}: a ClientProjection.Page endpoint ${why}`)
  }
  if (success.schema === null || success.unwrap !== null || success.contentType !== "application/json") {
    return fail("must succeed with a JSON list envelope returned whole")
  }
  const envelope = JsonSchema.resolve(success.schema, components)
  const members = new Map(JsonSchema.properties(envelope))
  const items = members.get("data")
  const links = members.get("cursor")
  const required = JsonSchema.required(envelope)
  if (items === undefined || JsonSchema.resolve(items, components).type !== "array" || !required.has("data")) {
    return fail("must succeed with a required `data` array")
  }
  const linkFields =
    links === undefined
      ? []
      : JsonSchema.properties(JsonSchema.resolve(links, components)).map(
          ([name, schema]) => `${name}:${JsonSchema.resolve(schema, components).type}`
        )
  if (!required.has("cursor") || [...linkFields].sort().join(",") !== "next:string,previous:string") {
    return fail("must succeed with a required `cursor: {previous?: string, next?: string}`")
  }
  const cursor = queryParams.find((p) => p.name === "cursor")
  if (cursor === undefined || cursor.required || cursor.style !== "form") {
    return fail("must take an optional `cursor` query parameter")
  }
  for (const name of spec.value.continuation) {
    if (name === "cursor" || !queryParams.some((p) => p.name === name)) {
      return fail(`names "${name}" as a continuation parameter, which is not a query parameter besides the cursor`)
    }
  }
  return {
    items: "data",
    links: "cursor",
    cursor: "cursor",
    initial: queryParams.filter((p) => p.name !== "cursor").map((p) => p.name),
    continuation: queryParams.filter((p) => spec.value.continuation.includes(p.name)).map((p) => p.name),
    pages: `${endpoint.name}Pages`
  }
}

const isDataEnvelope = (schema: JsonSchema.Schema | null, components: JsonSchema.Components): boolean => {
  if (schema === null) return false
  const resolved = JsonSchema.resolve(schema, components)
  const names = JsonSchema.properties(resolved).map(([name]) => name)
  return (
    resolved.type === "object" && names.length === 1 && names[0] === "data" && JsonSchema.required(resolved).has("data")
  )
}

const declaredErrors = (
  where: string,
  op: OpenApiOperation,
  components: JsonSchema.Components
): ReadonlyArray<DeclaredError> => {
  const out: Array<DeclaredError> = []
  for (const status of Object.keys(op.responses).filter((s) => !/^2\d\d$/.test(s))) {
    const content = op.responses[status]?.content ?? {}
    const json = content["application/json"]
    if (json === undefined)
      throw new Error(`${where}: declared error ${status} has no JSON body; errors must be tagged records`)
    const schema = JsonSchema.asSchema(json.schema, `${where} error ${status}`)
    const anyOf = schema.anyOf
    const members = Array.isArray(anyOf)
      ? anyOf.map((m, i) => JsonSchema.asSchema(m, `${where} error ${status}[${i}]`))
      : [schema]
    for (const member of members) {
      const tag = tagOf(JsonSchema.resolve(member, components))
      if (tag === undefined)
        throw new Error(`${where}: declared error ${status} is not a tagged record (no _tag literal)`)
      out.push({ status: Number(status), tag, schema: canonical(member) })
    }
  }
  return out.sort((a, b) => a.status - b.status || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0))
}

const tagOf = (schema: JsonSchema.Schema): string | undefined => {
  const tag = JsonSchema.properties(schema).find(([name]) => name === "_tag")?.[1]
  if (tag === undefined) return undefined
  const values = tag.enum ?? (tag.const === undefined ? undefined : [tag.const])
  return Array.isArray(values) && values.length === 1 && typeof values[0] === "string" ? values[0] : undefined
}
