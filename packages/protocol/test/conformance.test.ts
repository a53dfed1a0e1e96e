import * as fs from "node:fs"
import * as path from "node:path"
import { Api, ApiErrors, OpenApiDocument } from "@opencode-ai/protocol"
import { ContractExtension } from "@opencode-ai/schema"
import { describe, expect, it } from "vitest"

/**
 * Contract conformance: every operation our API declares must match the upstream reference
 * (`shared/reference/opencode-v2-openapi.json`) in path, method, operationId, parameters, status
 * codes, error tags and schema shapes. Operations are enumerated from our document, so adding an
 * endpoint adds its checks.
 */
type Json = any
// A copy of `shared/reference/opencode-v2-openapi.json`: the observed upstream 1.18.33 wire contract.
const referenceFile = path.resolve(__dirname, "fixtures/opencode-v2-openapi.json")
const reference: Json = JSON.parse(fs.readFileSync(referenceFile, "utf8"))
const ours: Json = JSON.parse(JSON.stringify(OpenApiDocument.make()))

// `$id` constrains nothing: Effect uses it only to name its built-ins (`{"$id": "/schemas/unknown"}`).
// `maxLength` is our input bound (prompt text, attachment URIs; see the README's limits): upstream's
// strings are unbounded, and a bound changes no shape a client builds.
const DOC_KEYS = new Set(["description", "title", "examples", "$comment", "$id", "maxLength"])

/**
 * Components compared by name only: their shapes differ from the reference on purpose, and
 * `packages/schema/test/reference-shapes.test.ts` asserts exactly how (its residuals). `V2Event` (the
 * `GET /api/event` stream) is the contract's union restricted to what this runtime emits.
 * `SessionDurableEvent` (and `SessionHistory`, which pages it) are the contract's durable union, every
 * member in its order, followed by our `session.next.title.updated` and `session.next.usage.recorded`
 * extensions.
 */
const CHECKED_BY_NAME = new Set(["V2Event", "SessionDurableEvent", "SessionHistory"])

/**
 * One of our components with its declared Contract Extensions taken out (see `ContractExtension` in
 * the schema package, which `reference-shapes.test.ts` checks in detail): added properties must be
 * optional and are removed; a widened union must be the contract's component plus the added
 * alternatives, and then stands for the contract's component.
 */
const withoutExtensions = (name: string, target: Json): [string, Json] => {
  const widened = ContractExtension.widened[name]
  if (widened !== undefined) {
    const refs = (target.anyOf as Array<Json>).map((s) => String(s.$ref).replace("#/components/schemas/", ""))
    expect(refs, `${name} widens ${widened.of}`).toEqual([widened.of, ...widened.added])
    return [widened.of, ours.components.schemas[widened.of]]
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

/**
 * Resolves refs and removes what only documents a schema, so equal shapes compare equal. A `$ref`'s
 * siblings (a refinement such as `{$ref: Int, exclusiveMinimum: 0}`) merge into the resolved target,
 * and `properties: {}` (constrains nothing; Effect emits it for records) is dropped.
 */
const shape = (schema: Json, doc: Json, seen: ReadonlyArray<string> = []): Json => {
  if (Array.isArray(schema)) return schema.map((s) => shape(s, doc, seen))
  if (schema === null || typeof schema !== "object") return schema
  let out: Json = {}
  const { $ref, ...rest } = schema
  if (typeof $ref === "string") {
    const name = $ref.replace("#/components/schemas/", "")
    if (seen.includes(name)) return { $recursive: name }
    if (CHECKED_BY_NAME.has(name)) return { $component: name }
    const [resolved, target] = doc === ours ? withoutExtensions(name, doc.components.schemas[name]) : [name, undefined]
    out = shape(target ?? doc.components.schemas[name], doc, [...seen, resolved])
  }
  for (const [key, value] of Object.entries(rest)) {
    if (DOC_KEYS.has(key)) continue
    if (key === "properties" && Object.keys(value as object).length === 0) continue
    if (key === "allOf") {
      // Refinements render as allOf fragments; merged, they are one constraint set.
      for (const part of value as Array<Json>) out = { ...out, ...shape(part, doc, seen) }
      continue
    }
    out[key] = shape(value, doc, seen)
  }
  if (Array.isArray(out.required)) {
    if (out.required.length === 0) delete out.required
    else out.required = [...out.required].sort()
  }
  for (const union of ["anyOf", "oneOf"] as const) {
    if (!Array.isArray(out[union])) continue
    const unique = [...new Map(out[union].map((s: Json) => [JSON.stringify(sortKeys(s)), s])).values()]
    unique.sort((a, b) => JSON.stringify(sortKeys(a)).localeCompare(JSON.stringify(sortKeys(b))))
    if (unique.length === 1) {
      const { [union]: _, ...rest } = out
      out = { ...rest, ...(unique[0] as Json) }
    } else out[union] = unique
  }
  return sortKeys(out)
}

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

const tagsOf = (schema: Json): Array<string> => {
  const tags = new Set<string>()
  const walk = (s: Json) => {
    if (!s || typeof s !== "object") return
    if (s.properties?._tag?.enum) for (const t of s.properties._tag.enum) tags.add(t)
    for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) walk(alt)
  }
  walk(schema)
  return [...tags].sort()
}

/**
 * A success response's content with the operation's declared added fields (`Api.additionalResponseFields`)
 * taken out, each checked to be there and optional first.
 */
const withoutResponseFields = (operationId: string, status: string, content: Record<string, Json>) => {
  const added = Api.additionalResponseFields[operationId]
  if (added === undefined || !status.startsWith("2")) return content
  return Object.fromEntries(
    Object.entries(content).map(([type, schema]) => {
      const properties = { ...schema.properties }
      for (const field of Object.keys(added)) {
        expect(properties[field], `${operationId} ${field} is declared as an added field`).toBeDefined()
        expect(schema.required ?? [], `${operationId} ${field} is optional`).not.toContain(field)
        delete properties[field]
      }
      return [type, { ...schema, properties }]
    })
  )
}

const allOperations = Object.entries(ours.paths as Record<string, Record<string, Json>>).flatMap(([p, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ path: p, method, op }))
)

const extensions = Api.extensionOperations
const operations = allOperations.filter((o) => !extensions.has(o.op.operationId))

describe("contract conformance with the upstream reference", () => {
  it("declares every operation of the reference (58), each at its path and method", () => {
    const declared = operations.map((o) => `${o.method.toUpperCase()} ${o.path} ${o.op.operationId}`).sort()
    const referenced = Object.entries(reference.paths as Record<string, Record<string, Json>>)
      .flatMap(([p, methods]) => Object.entries(methods).map(([m, op]) => `${m.toUpperCase()} ${p} ${op.operationId}`))
      .sort()
    expect(referenced).toHaveLength(58)
    expect(declared).toEqual(referenced)
  })

  it("spells as oneOf exactly the unions the reference spells as oneOf", () => {
    const oneOfs = (doc: Json) =>
      Object.entries(doc.components.schemas as Record<string, Json>)
        .filter(([name, schema]) => schema.oneOf !== undefined && ours.components.schemas[name] !== undefined)
        .map(([name]) => name)
        .sort()
    expect(oneOfs(reference)).toEqual(["SessionDurableEvent"])
    expect(oneOfs(ours)).toEqual(oneOfs(reference))
    for (const schema of Object.values(ours.components.schemas as Record<string, Json>)) {
      if (schema.oneOf !== undefined) expect(schema.anyOf).toBeUndefined()
    }
  })

  describe.each(allOperations.filter((o) => extensions.has(o.op.operationId)))(
    "extension $method $path",
    ({ path: p, method, op }) => {
      it("is absent from the reference and follows its conventions (v2 id, 400 and 401 errors)", () => {
        expect(reference.paths[p]?.[method]).toBeUndefined()
        expect(op.operationId).toMatch(/^v2\./)
        expect(tagsOf(shape(op.responses["400"].content["application/json"].schema, ours))).toContain(
          "InvalidRequestError"
        )
        expect(tagsOf(shape(op.responses["401"].content["application/json"].schema, ours))).toEqual([
          "UnauthorizedError"
        ])
      })
    }
  )

  it("adds response fields only to reference operations, each listed with its reason", () => {
    for (const [operationId, fields] of Object.entries(Api.additionalResponseFields)) {
      expect(operations.map((o) => o.op.operationId)).toContain(operationId)
      for (const reason of Object.values(fields)) expect(reason.length).toBeGreaterThan(0)
    }
  })

  describe.each(operations)("$method $path", ({ path: p, method, op }) => {
    const ref: Json = reference.paths[p]?.[method]

    it("exists in the reference with the same operationId and tags", () => {
      expect(ref, `${method.toUpperCase()} ${p} is not in the reference`).toBeDefined()
      expect(op.operationId).toBe(ref.operationId)
      expect(op.tags).toEqual(ref.tags)
    })

    it("has the same parameters", () => {
      const params = (list: Array<Json>, doc: Json) =>
        Object.fromEntries(
          (list ?? []).map((param) => [
            `${param.in}:${param.name}`,
            {
              required: param.required ?? false,
              style: param.style,
              explode: param.explode,
              schema: shape(param.schema, doc)
            }
          ])
        )
      expect(params(op.parameters, ours)).toEqual(params(ref.parameters, reference))
    })

    it("has the same request body", () => {
      const body = (o: Json, doc: Json) =>
        o.requestBody && {
          required: o.requestBody.required,
          content: Object.fromEntries(
            Object.entries(o.requestBody.content).map(([type, c]: [string, Json]) => [type, shape(c.schema, doc)])
          )
        }
      expect(body(op, ours)).toEqual(body(ref, reference))
    })

    it("has the same status codes, error tags and response shapes", () => {
      const added = Api.additionalStatuses[op.operationId] ?? []
      expect(Object.keys(op.responses).sort()).toEqual([...Object.keys(ref.responses), ...added].sort())
      for (const status of added) {
        expect(ref.responses[status], `${status} is already in the reference`).toBeUndefined()
        // Each added status answers only errors the API documents with that status.
        const tags = tagsOf(shape(op.responses[status].content["application/json"].schema, ours))
        expect(tags.length).toBeGreaterThan(0)
        for (const tag of tags) expect(ApiErrors.status[tag as keyof typeof ApiErrors.status], tag).toBe(Number(status))
      }
      for (const status of Object.keys(ref.responses)) {
        const content = (r: Json, doc: Json) =>
          Object.fromEntries(
            Object.entries(r.content ?? {}).map(([type, c]: [string, Json]) => [type, shape(c.schema, doc)])
          )
        const mine = withoutResponseFields(op.operationId, status, content(op.responses[status], ours))
        const theirs = content(ref.responses[status], reference)
        expect(Object.keys(mine), `content types of ${status}`).toEqual(Object.keys(theirs))
        for (const type of Object.keys(theirs)) {
          expect(tagsOf(mine[type]), `error tags of ${status}`).toEqual(tagsOf(theirs[type]))
          expect(mine[type], `shape of ${status} ${type}`).toEqual(theirs[type])
        }
      }
    })
  })
})
