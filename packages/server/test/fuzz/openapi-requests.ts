import * as fc from "fast-check"

/*
 * Requests generated from the OpenAPI document, one operation at a time. Each request mixes what the
 * document says is valid with what a hostile client sends instead:
 *
 *   path params    a known id, a well-prefixed unknown id, or junk (empty-ish, huge, unicode, `../`)
 *   query params   schema values, wrong types, unknown keys, repeated keys, huge and unicode values
 *   JSON bodies    schema values; a field replaced by a nasty value, a required field dropped, an
 *                  extra field, deep nesting, wrong top-level types, or text that is not JSON at all
 *
 * Bodies are always sent as `application/json`: the content-type rules have tests of their own.
 */

type Json = any

export interface Operation {
  readonly method: string
  readonly path: string
  readonly operationId: string
  readonly parameters: ReadonlyArray<{ readonly in: string; readonly name: string; readonly schema: Json }>
  readonly body: Json | undefined
  readonly streams: boolean
}

export interface Request {
  readonly operationId: string
  readonly method: string
  /** Path and query, percent-encoded. */
  readonly target: string
  /** The raw body text, when there is one. */
  readonly body: string | undefined
  readonly streams: boolean
}

/** Every operation of the document. */
export const operations = (document: Json): ReadonlyArray<Operation> =>
  Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      operationId: op.operationId,
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.["application/json"]?.schema,
      streams: Object.values(op.responses as Record<string, Json>).some(
        (r) => r.content?.["text/event-stream"] !== undefined
      )
    }))
  )

/** Values that break naive handling of any field. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER, "", " ", "\u0000", [], {}),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom("../../etc/passwd", "%00", "\uFEFF", "\uD800", "😀".repeat(50), "<script>", "' OR 1=1 --"),
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => "x".repeat(n)),
  fc.integer({ min: 2, max: 400 }).map((n) => nest(n)),
  fc.array(fc.integer(), { maxLength: 2000 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 50 })
)

/** `depth` levels of arrays and objects around a 1. */
const nest = (depth: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value }
  return value
}

/** The prefix an id schema requires (`startsWith("ses")` in its title), if any. */
const prefixOf = (schema: Json): string | undefined => /startsWith\("([^"]*)"\)/.exec(schema?.title ?? "")?.[1]

/** A value the schema accepts (as far as the schema says), resolving `$ref`s against `document`. */
export const valid = (schema: Json, document: Json, depth = 0): fc.Arbitrary<unknown> => {
  if (schema === undefined || schema === true || depth > 8) return fc.constant(null)
  if (schema.$ref !== undefined) {
    const name = String(schema.$ref).replace("#/components/schemas/", "")
    return fc.constant(null).chain(() => valid(document.components.schemas[name], document, depth + 1))
  }
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(schema[key])) return fc.oneof(...schema[key].map((s: Json) => valid(s, document, depth + 1)))
  }
  if (Array.isArray(schema.allOf)) {
    const merged = Object.assign({}, ...schema.allOf, { ...schema, allOf: undefined })
    delete merged.allOf
    return valid(merged, document, depth + 1)
  }
  switch (schema.type) {
    case "string": {
      const prefix = prefixOf(schema)
      if (prefix !== undefined)
        return fc.string({ unit: fc.constantFrom(..."abcdefABCDEF0123456789"), maxLength: 26 }).map((s) => prefix + s)
      if (typeof schema.pattern === "string")
        return fc.stringMatching(new RegExp(schema.pattern)).map((s) => s.slice(0, schema.maxLength ?? 64))
      return fc.string({ maxLength: Math.min(schema.maxLength ?? 30, 30) })
    }
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 })
    case "number":
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true })
    case "boolean":
      return fc.boolean()
    case "null":
      return fc.constant(null)
    case "array":
      return fc.array(valid(schema.items, document, depth + 1), { maxLength: 3 })
    case "object": {
      const properties: Record<string, Json> = schema.properties ?? {}
      const required = new Set<string>(schema.required ?? [])
      const fields = Object.fromEntries(
        Object.entries(properties).map(([k, s]) => [k, valid(s, document, depth + 1)] as const)
      )
      return fc.record(fields, { requiredKeys: [...required].filter((k) => k in fields) })
    }
    default:
      return fc.oneof(fc.constant(null), fc.string({ maxLength: 10 }), fc.integer())
  }
}

/** One change that makes a valid object body invalid (or at least unusual). */
const mutate = (value: unknown): fc.Arbitrary<unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return nasty
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  return fc.oneof(
    // A field replaced by a nasty value.
    keys.length === 0
      ? nasty.map((v) => ({ field: v }))
      : fc.tuple(fc.constantFrom(...keys), nasty).map(([k, v]) => ({ ...record, [k]: v })),
    // A field dropped.
    keys.length === 0
      ? fc.constant(record)
      : fc.constantFrom(...keys).map((k) => Object.fromEntries(Object.entries(record).filter(([key]) => key !== k))),
    // An extra field, sometimes with a huge or odd name.
    fc
      .tuple(fc.oneof(fc.string({ maxLength: 20 }), fc.constant("__proto__"), fc.constant("k".repeat(50_000))), nasty)
      .map(([k, v]) => ({ ...record, [k]: v })),
    // The wrong top-level type.
    nasty
  )
}

/** Body text: JSON of a valid or mutated value, or text that is not JSON. */
const bodyText = (schema: Json, document: Json): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: valid(schema, document).map((v) => JSON.stringify(v)) },
    {
      weight: 5,
      arbitrary: valid(schema, document)
        .chain(mutate)
        .map((v) => JSON.stringify(v) ?? "null")
    },
    // The whole body wrapped deep (as text: too deep for JSON.stringify).
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid(schema, document), fc.integer({ min: 50, max: 6000 }))
        .map(([v, n]) => `${"[".repeat(n)}${JSON.stringify(v)}${"]".repeat(n)}`)
    },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom("", "{", "[1,", "nul", '{"a":1}}', "\u0000", "{'a':1}", '"\\ud800"', "1e99999"),
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.integer({ min: 2, max: 20_000 }).map((n) => "[".repeat(n)),
        fc.integer({ min: 2, max: 20_000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`)
      )
    }
  )

/** A path parameter: one of the `known` ids, a schema value, or junk. */
const pathParam = (schema: Json, document: Json, known: ReadonlyArray<string>): fc.Arbitrary<string> => {
  const prefix = prefixOf(schema)
  const matching = known.filter((id) => prefix === undefined || id.startsWith(prefix))
  return fc.oneof(
    ...(matching.length > 0 ? [{ weight: 4, arbitrary: fc.constantFrom(...matching) }] : []),
    { weight: 2, arbitrary: valid(schema, document).map(String) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
        fc.constantFrom("..", ".", "%2e%2e", "a/b", "%00", "ses_", " ", "null", "-1"),
        fc.integer({ min: 100, max: 7000 }).map((n) => `${prefix ?? ""}${"z".repeat(n)}`)
      )
    }
  )
}

/** A query value for `schema`: valid, or something else. */
const queryValue = (schema: Json, document: Json): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 3, arbitrary: valid(schema, document) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom("", "-1", "0", "1.5", "1e400", "NaN", "abc", "[]", "{}", "true"),
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.integer({ min: 100, max: 6000 }).map((n) => "q".repeat(n))
      )
    }
  )

const encode = (value: string) => encodeURIComponent(value)

/** `name=value` pairs for one query parameter (deepObject style for objects). */
const queryPairs = (name: string, value: unknown): Array<string> => {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([k, v]) => queryPairs(`${name}[${k}]`, v))
  }
  if (Array.isArray(value)) return value.flatMap((v) => queryPairs(name, v))
  return [`${encode(name)}=${encode(typeof value === "string" ? value : JSON.stringify(value))}`]
}

/** Requests for `op`: path and query params and a body where the operation takes one. */
export const requests = (op: Operation, document: Json, known: ReadonlyArray<string>): fc.Arbitrary<Request> => {
  const pathParams = op.parameters.filter((p) => p.in === "path")
  const queryParams = op.parameters.filter((p) => p.in === "query")
  const path = fc
    .tuple(...pathParams.map((p) => pathParam(p.schema, document, known)))
    .map((values) =>
      pathParams.reduce((acc, p, i) => acc.replace(`{${p.name}}`, encode(values[i] ?? "")), op.path as string)
    )
  const query = fc
    .tuple(
      fc.tuple(...queryParams.map((p) => fc.option(queryValue(p.schema, document), { nil: undefined, freq: 2 }))),
      fc.array(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })), { maxLength: 2 })
    )
    .map(([values, extra]) => [
      ...queryParams.flatMap((p, i) => (values[i] === undefined ? [] : queryPairs(p.name, values[i]))),
      ...extra.map(([k, v]) => `${encode(k)}=${encode(v)}`)
    ])
  const body =
    op.body === undefined
      ? fc.option(fc.constantFrom("{}", "[]", "x"), { nil: undefined, freq: 6 })
      : fc.option(bodyText(op.body, document), { nil: undefined, freq: 12 })
  return fc.tuple(path, query, body).map(([p, q, b]) => ({
    operationId: op.operationId,
    method: op.method,
    target: q.length === 0 ? p : `${p}?${q.join("&")}`,
    body: op.method === "GET" || op.method === "HEAD" ? undefined : b,
    streams: op.streams
  }))
}
