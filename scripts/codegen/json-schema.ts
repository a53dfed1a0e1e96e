export * as JsonSchema from "./json-schema.js"

/** Any JSON value, as read from an OpenAPI document or written to the SDK Contract IR. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** A JSON Schema object (OpenAPI 3.1 dialect). Boolean schemas are not produced by Effect and not accepted. */
export interface Schema {
  readonly [keyword: string]: Json
}

/** The components a `$ref` may point into, keyed by component name. */
export type Components = Readonly<Record<string, Schema>>

/** Where `$ref`s point: `#/components/schemas/<Name>`, the same form as in the OpenAPI document. */
export const refPrefix = "#/components/schemas/"

export const isObject = (value: unknown): value is { readonly [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Narrows a JSON value that must be a schema; `where` names the position in error messages. */
export const asSchema = (value: unknown, where: string): Schema => {
  if (!isObject(value)) throw new Error(`${where}: expected a JSON Schema object, got ${JSON.stringify(value)}`)
  return value
}

/** The component name of a `{ $ref }` schema, or `undefined` when the schema is not a reference. */
export const refName = (schema: Schema): string | undefined => {
  const ref = schema.$ref
  if (typeof ref !== "string") return undefined
  if (!ref.startsWith(refPrefix)) throw new Error(`unsupported $ref ${ref}: only ${refPrefix}<Name> is understood`)
  return ref.slice(refPrefix.length)
}

/** Follows `$ref`s until a schema that is not a reference. Fails on a missing component or a cycle of refs. */
export const resolve = (schema: Schema, components: Components): Schema => {
  const seen = new Set<string>()
  let current = schema
  for (let name = refName(current); name !== undefined; name = refName(current)) {
    if (seen.has(name)) throw new Error(`$ref cycle through ${[...seen].join(" -> ")}`)
    seen.add(name)
    const next = components[name]
    if (next === undefined) throw new Error(`$ref to unknown component ${name}`)
    current = next
  }
  return current
}

/** The names of every component referenced anywhere inside `value` (not transitively). */
export const references = (value: Json, into: Set<string> = new Set()): Set<string> => {
  if (Array.isArray(value)) {
    for (const item of value) references(item, into)
  } else if (isObject(value)) {
    const name = refName(value)
    if (name !== undefined) into.add(name)
    for (const key of Object.keys(value)) references(value[key] as Json, into)
  }
  return into
}

/** Every component reachable from `roots`, following references through components. */
export const reachable = (roots: ReadonlyArray<Json>, components: Components): Set<string> => {
  const found = new Set<string>()
  const pending = [...references(roots as Json)]
  while (pending.length > 0) {
    const name = pending.pop() as string
    if (found.has(name)) continue
    const component = components[name]
    if (component === undefined) throw new Error(`$ref to unknown component ${name}`)
    found.add(name)
    pending.push(...references(component))
  }
  return found
}

/** The property schemas of an object schema, in declared order. */
export const properties = (schema: Schema): ReadonlyArray<readonly [string, Schema]> => {
  const props = schema.properties
  if (props === undefined) return []
  if (!isObject(props)) throw new Error(`"properties" must be an object`)
  return Object.keys(props).map((name) => [name, asSchema(props[name], `property ${name}`)] as const)
}

/** The `required` names of an object schema. */
export const required = (schema: Schema): ReadonlySet<string> => {
  const names = schema.required
  return new Set(Array.isArray(names) ? names.filter((name): name is string => typeof name === "string") : [])
}

/**
 * A copy of `value` with the keywords of every schema in sorted order, so that the serialized IR does
 * not depend on the order a library happens to insert keywords. Member order inside `properties` is
 * kept: it is the declared field order that emitters reproduce. Arrays keep their order.
 */
export const canonical = (value: Json, keepOrder = false): Json => {
  if (Array.isArray(value)) return value.map((item) => canonical(item))
  if (!isObject(value)) return value
  const keys = keepOrder ? Object.keys(value) : Object.keys(value).sort()
  const out: Record<string, Json> = {}
  for (const key of keys) out[key] = canonical(value[key] as Json, !keepOrder && key === "properties")
  return out
}
