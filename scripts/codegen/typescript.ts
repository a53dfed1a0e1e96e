export * as TypeScript from "./typescript.js"

import { JsonSchema } from "./json-schema.js"

const identifierPattern = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** A TypeScript identifier for a schema name; fails when the name cannot be one without renaming. */
export const typeName = (name: string): string => {
  if (!identifierPattern.test(name)) throw new Error(`"${name}" is not a valid TypeScript type name`)
  return name
}

/** `PascalCase` of a camelCase or dotted name: `sessions` → `Sessions`, `switch.agent` → `SwitchAgent`. */
export const pascal = (name: string): string =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part.length > 0)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join("")

/** An object key as written in a type or object literal: bare when it is an identifier, quoted otherwise. */
export const propertyKey = (name: string): string => (identifierPattern.test(name) ? name : JSON.stringify(name))

/** A JSDoc block for `text` at `indent`, or the empty string when there is no text. */
export const docComment = (text: string | undefined, indent = ""): string => {
  if (text === undefined || text.trim() === "") return ""
  const lines = text.replace(/\*\//g, "*\\/").split("\n")
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`
  return `${indent}/**\n${lines.map((line) => `${indent} *${line === "" ? "" : ` ${line}`}`).join("\n")}\n${indent} */\n`
}

export interface RenderOptions {
  /** How a `$ref` component name appears in the output. */
  readonly ref: (name: string) => string
  /** Write optional properties as `?: T | undefined` (inputs) instead of `?: T` (outputs). */
  readonly optionalUndefined?: boolean
}

/**
 * The TypeScript type of values matching `schema`: a structural, read-only view. Constraints that types
 * cannot express (patterns, bounds) are dropped; `description`s become doc comments on properties.
 */
export const render = (schema: JsonSchema.Schema, options: RenderOptions, indent = ""): string => {
  const ref = JsonSchema.refName(schema)
  if (ref !== undefined) return options.ref(ref)
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal))
  if (schema.const !== undefined) return literal(schema.const)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives)) {
    return union(alternatives.map((member, i) => render(JsonSchema.asSchema(member, `anyOf[${i}]`), options, indent)))
  }
  const base = renderType(schema, options, indent)
  const allOf = schema.allOf
  if (!Array.isArray(allOf)) return base
  // Members that only add constraints (a pattern, a bound) render as `unknown` and add nothing.
  const parts = [
    base,
    ...allOf.map((member, i) => render(JsonSchema.asSchema(member, `allOf[${i}]`), options, indent))
  ].filter((part) => part !== "unknown")
  return parts.length === 0 ? "unknown" : [...new Set(parts)].map(parenthesize).join(" & ")
}

const renderType = (schema: JsonSchema.Schema, options: RenderOptions, indent: string): string => {
  const type = schema.type
  if (Array.isArray(type)) {
    return union(type.map((t) => renderType({ ...schema, type: t }, options, indent)))
  }
  switch (type) {
    case "string":
      return "string"
    case "number":
    case "integer":
      return "number"
    case "boolean":
      return "boolean"
    case "null":
      return "null"
    case "array":
      return renderArray(schema, options, indent)
    case "object":
      return renderObject(schema, options, indent)
    case undefined:
      return schema.properties !== undefined ? renderObject(schema, options, indent) : "unknown"
    default:
      throw new Error(`unsupported JSON Schema type ${JSON.stringify(type)}`)
  }
}

const renderArray = (schema: JsonSchema.Schema, options: RenderOptions, indent: string): string => {
  const prefix = schema.prefixItems
  const items = schema.items
  if (Array.isArray(prefix) || Array.isArray(items)) {
    const fixed = (Array.isArray(prefix) ? prefix : (items as ReadonlyArray<JsonSchema.Json>)).map((member, i) =>
      render(JsonSchema.asSchema(member, `items[${i}]`), options, indent)
    )
    const rest = Array.isArray(prefix) ? items : schema.additionalItems
    const tail = JsonSchema.isObject(rest) ? [`...Array<${render(rest, options, indent)}>`] : []
    return `readonly [${[...fixed, ...tail].join(", ")}]`
  }
  return `ReadonlyArray<${JsonSchema.isObject(items) ? render(items, options, indent) : "unknown"}>`
}

const renderObject = (schema: JsonSchema.Schema, options: RenderOptions, indent: string): string => {
  const props = JsonSchema.properties(schema)
  const required = JsonSchema.required(schema)
  const additional = schema.additionalProperties
  const inner = `${indent}  `
  const lines = props.map(([name, property]) => {
    const optional = !required.has(name)
    const type = render(property, options, inner)
    const description = typeof property.description === "string" ? property.description : undefined
    const suffix = optional && options.optionalUndefined === true ? " | undefined" : ""
    return `${docComment(description, inner)}${inner}readonly ${propertyKey(name)}${optional ? "?" : ""}: ${type}${suffix}`
  })
  if (JsonSchema.isObject(additional)) {
    // An index signature must admit every declared property, so it widens to unknown alongside them.
    lines.push(`${inner}readonly [key: string]: ${props.length === 0 ? render(additional, options, inner) : "unknown"}`)
  } else if (additional !== false && props.length === 0) {
    lines.push(`${inner}readonly [key: string]: unknown`)
  }
  if (lines.length === 0) return "Record<string, never>"
  return `{\n${lines.join("\n")}\n${indent}}`
}

const literal = (value: JsonSchema.Json): string => {
  if (value === null || typeof value === "boolean" || typeof value === "number" || typeof value === "string") {
    return JSON.stringify(value)
  }
  throw new Error(`unsupported enum member ${JSON.stringify(value)}`)
}

const union = (members: ReadonlyArray<string>): string => {
  const unique = [...new Set(members)]
  if (unique.length === 0) return "never"
  if (unique.includes("unknown")) return "unknown"
  return unique.map(parenthesize).join(" | ")
}

/** Multi-line object types and function types are safe as union members; only bare unions need parentheses. */
const parenthesize = (type: string): string => (/^[^{(<[]*[|&]/.test(type) ? `(${type})` : type)
