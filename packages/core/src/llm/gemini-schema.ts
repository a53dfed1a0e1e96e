export * as GeminiSchema from "./gemini-schema.js"

/**
 * A tool's JSON Schema as the Gemini API accepts it in `functionDeclarations[].parameters`: its
 * `Schema` object, a documented subset of OpenAPI 3.0 that rejects unknown keywords (`$schema`,
 * `additionalProperties`, `$ref`, …) and type unions.
 *
 * {@link convert} keeps, per node:
 * - `type`, upper-cased (`STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`, `OBJECT`, `NULL`); when it
 *   is missing it is inferred from `properties` (object), `items` (array), or a string `enum` / `const`;
 * - `nullable: true` for `"null"` in a `type` list, a `{type: "null"}` branch of `anyOf` / `oneOf`, a
 *   `null` in `enum`, or an OpenAPI-style `nullable: true`;
 * - `title`, `description`, `default`;
 * - strings: `enum` (string values only; `const` becomes a one-value `enum`), `format` when Gemini
 *   supports it for strings (`enum`, `date-time`), `minLength`, `maxLength`, `pattern`;
 * - numbers: `format` (`float` / `double`, `int32` / `int64` for integers), `minimum`, `maximum`;
 * - arrays: `items` (the first schema of a tuple form), `minItems`, `maxItems`;
 * - objects: `properties`, `required` (only names that are properties), `minProperties`,
 *   `maxProperties`; a node without properties is an open `OBJECT` (no `properties` key: Gemini
 *   rejects an empty one);
 * - unions: `anyOf` / `oneOf` become `anyOf` (a single non-null branch is inlined); a `type` list with
 *   several non-null types becomes an `anyOf` of one node per type; `allOf` is merged into one node
 *   (properties and `required` united, other keywords from the first that has them).
 *
 * Local references (`#/$defs/…`, `#/definitions/…`, any `#/` pointer) are inlined, their sibling
 * keywords winning; a reference met again inside itself (a recursive type) and one that does not
 * resolve become an unconstrained node. Everything else (`$schema`, `$id`, `$defs`,
 * `additionalProperties`, `patternProperties`, `exclusiveMinimum`, `uniqueItems`, `not`, `if`, …) is
 * dropped: the model sees a slightly looser schema, never a rejected request.
 *
 * Pure; the input is not modified.
 */

type Node = Readonly<Record<string, unknown>>

const record = (value: unknown): Node | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Node) : undefined

const typeNames: Readonly<Record<string, string>> = {
  string: "STRING",
  number: "NUMBER",
  integer: "INTEGER",
  boolean: "BOOLEAN",
  array: "ARRAY",
  object: "OBJECT",
  null: "NULL"
}

/** The `format` values Gemini accepts, per type. */
const formats: Readonly<Record<string, ReadonlyArray<string>>> = {
  STRING: ["enum", "date-time"],
  NUMBER: ["float", "double"],
  INTEGER: ["int32", "int64"]
}

interface Context {
  readonly root: Node
  /** The references being inlined, outermost first (a recursive one is not followed again). */
  readonly expanding: ReadonlyArray<string>
}

/** The value at a local JSON Pointer (`#/a/b~1c`), or undefined. */
const resolvePointer = (root: Node, ref: string): unknown => {
  if (!ref.startsWith("#")) return undefined
  const path = ref.slice(1).split("/").slice(1)
  let at: unknown = root
  for (const segment of path) {
    const key = decodeURIComponent(segment).replaceAll("~1", "/").replaceAll("~0", "~")
    const node = record(at)
    if (node === undefined || !(key in node)) return undefined
    at = node[key]
  }
  return at
}

/** `allOf` folded into the node: properties and `required` united, other keywords first come first kept. */
const mergeAllOf = (node: Node, context: Context): Node => {
  const parts = Array.isArray(node.allOf) ? node.allOf : []
  if (parts.length === 0) return node
  const { allOf: _allOf, ...own } = node
  const merged: Record<string, unknown> = { ...own }
  const properties: Record<string, unknown> = { ...record(own.properties) }
  const addProperties = (value: unknown) => {
    for (const [name, schema] of Object.entries(record(value) ?? {}))
      if (!(name in properties)) properties[name] = schema
  }
  const required = new Set<string>(Array.isArray(own.required) ? own.required.filter((x) => typeof x === "string") : [])
  for (const raw of parts) {
    const part = dereference(record(raw) ?? {}, context).node
    for (const [key, value] of Object.entries(part)) {
      if (key === "properties") addProperties(value)
      else if (key === "required" && Array.isArray(value)) {
        for (const name of value) if (typeof name === "string") required.add(name)
      } else if (!(key in merged)) merged[key] = value
    }
  }
  if (Object.keys(properties).length > 0) merged.properties = properties
  if (required.size > 0) merged.required = [...required]
  return merged
}

/** The node with its `$ref` inlined (siblings win), and the context to convert what it contains in. */
const dereference = (node: Node, context: Context): { readonly node: Node; readonly context: Context } => {
  const ref = node.$ref
  if (typeof ref !== "string") return { node, context }
  const { $ref: _ref, ...siblings } = node
  if (context.expanding.includes(ref)) return { node: { ...siblings, $unresolved: true }, context }
  const target = record(resolvePointer(context.root, ref))
  if (target === undefined) return { node: { ...siblings, $unresolved: true }, context }
  return dereference({ ...target, ...siblings }, { ...context, expanding: [...context.expanding, ref] })
}

const isNullBranch = (value: unknown): boolean => {
  const node = record(value)
  return (
    node !== undefined && (node.type === "null" || (Array.isArray(node.type) && node.type.every((t) => t === "null")))
  )
}

const numberKeys = (node: Node, keys: ReadonlyArray<string>): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const key of keys) {
    const value = node[key]
    if (typeof value === "number" && Number.isFinite(value)) out[key] = value
  }
  return out
}

/** The keywords every node keeps: title, description, default. */
const annotations = (node: Node): Record<string, unknown> => ({
  ...(typeof node.title === "string" ? { title: node.title } : {}),
  ...(typeof node.description === "string" ? { description: node.description } : {}),
  ...(node.default === undefined ? {} : { default: node.default })
})

const convertNode = (raw: unknown, outer: Context): Record<string, unknown> => {
  const start = record(raw)
  if (start === undefined) return {}
  const { node: resolved, context } = dereference(start, outer)
  if (resolved.$unresolved === true) return annotations(resolved)
  const node = mergeAllOf(resolved, context)

  const declared = Array.isArray(node.type) ? node.type : typeof node.type === "string" ? [node.type] : []
  const enumValues = Array.isArray(node.enum) ? node.enum : node.const !== undefined ? [node.const] : undefined
  let nullable = node.nullable === true || declared.includes("null") || enumValues?.includes(null) === true

  // anyOf / oneOf: null branches make the node nullable; one remaining branch is inlined.
  const union = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined
  if (union !== undefined) {
    const branches = union.filter((branch) => !isNullBranch(branch))
    if (branches.length < union.length) nullable = true
    const { anyOf: _anyOf, oneOf: _oneOf, ...rest } = node
    if (branches.length === 1) {
      return { ...convertNode(branches[0], context), ...annotations(rest), ...(nullable ? { nullable: true } : {}) }
    }
    if (branches.length > 1) {
      return {
        anyOf: branches.map((branch) => convertNode(branch, context)),
        ...annotations(rest),
        ...(nullable ? { nullable: true } : {})
      }
    }
  }

  const types = declared.filter((t): t is string => typeof t === "string" && t !== "null")
  if (types.length > 1) {
    return {
      anyOf: types.map((type) => convertNode({ ...node, type, description: undefined, title: undefined }, context)),
      ...annotations(node),
      ...(nullable ? { nullable: true } : {})
    }
  }
  const strings = enumValues?.filter((value): value is string => typeof value === "string")
  // Gemini enums are strings: an enum counts only when every value but null is one.
  const stringEnum =
    strings !== undefined && strings.length > 0 && strings.length === enumValues?.filter((v) => v !== null).length
      ? strings
      : undefined
  const inferred =
    types[0] ??
    (declared.includes("null")
      ? "null"
      : record(node.properties) !== undefined
        ? "object"
        : node.items !== undefined || node.prefixItems !== undefined
          ? "array"
          : stringEnum !== undefined
            ? "string"
            : undefined)
  const type = inferred === undefined ? undefined : typeNames[inferred]
  const out: Record<string, unknown> = {
    ...(type === undefined ? {} : { type }),
    ...annotations(node),
    ...(nullable && type !== "NULL" ? { nullable: true } : {})
  }
  const format = typeof node.format === "string" ? node.format : undefined
  if (type !== undefined && format !== undefined && (formats[type] ?? []).includes(format)) out.format = format

  switch (type) {
    case "STRING": {
      if (stringEnum !== undefined) out.enum = stringEnum
      Object.assign(out, numberKeys(node, ["minLength", "maxLength"]))
      if (typeof node.pattern === "string") out.pattern = node.pattern
      break
    }
    case "NUMBER":
    case "INTEGER":
      Object.assign(out, numberKeys(node, ["minimum", "maximum"]))
      break
    case "ARRAY": {
      const items = Array.isArray(node.items)
        ? node.items[0]
        : (node.items ?? (Array.isArray(node.prefixItems) ? node.prefixItems[0] : undefined))
      if (record(items) !== undefined) out.items = convertNode(items, context)
      Object.assign(out, numberKeys(node, ["minItems", "maxItems"]))
      break
    }
    case "OBJECT": {
      const properties = Object.entries(record(node.properties) ?? {})
      if (properties.length > 0) {
        out.properties = Object.fromEntries(properties.map(([name, value]) => [name, convertNode(value, context)]))
        const names = new Set(properties.map(([name]) => name))
        const required = (Array.isArray(node.required) ? node.required : []).filter(
          (name): name is string => typeof name === "string" && names.has(name)
        )
        if (required.length > 0) out.required = [...new Set(required)]
      }
      Object.assign(out, numberKeys(node, ["minProperties", "maxProperties"]))
      break
    }
  }
  return out
}

/** One node of `schema` (its root by default) as a Gemini `Schema` (see the module comment). */
export const node = (schema: unknown): Record<string, unknown> => {
  const root = record(schema) ?? {}
  return convertNode(root, { root, expanding: [] })
}

/**
 * A tool's input schema as the `parameters` of its function declaration, or undefined when the tool
 * takes no arguments (an object schema without properties: Gemini rejects an `OBJECT` whose
 * `properties` are empty, and a declaration without `parameters` means "no arguments").
 */
export const convert = (schema: unknown): Record<string, unknown> | undefined => {
  const converted = node(schema)
  if (converted.type === "OBJECT" && converted.properties === undefined) return undefined
  return converted
}
