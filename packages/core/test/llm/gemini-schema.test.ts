import { NodeFileSystem } from "@effect/platform-node"
import { it as effect } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { GeminiSchema } from "../../src/llm/gemini-schema.js"
import { BuiltinTools } from "../../src/tool/builtin/builtin-tools.js"

/** The keywords of Gemini's `Schema` object. */
const allowed = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "maxItems",
  "minItems",
  "properties",
  "required",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "example",
  "anyOf",
  "propertyOrdering",
  "default",
  "items",
  "minimum",
  "maximum"
])
const types = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"])

/** Every keyword of `node` (recursively) that Gemini's Schema does not have, as paths. */
const offending = (node: Record<string, any>, at = "$"): ReadonlyArray<string> => [
  ...Object.keys(node)
    .filter((key) => !allowed.has(key))
    .map((key) => `${at}.${key}`),
  ...(node.type === undefined || types.has(node.type) ? [] : [`${at}.type=${String(node.type)}`]),
  ...Object.entries(node.properties ?? {}).flatMap(([name, child]) => offending(child as any, `${at}.${name}`)),
  ...(node.items === undefined ? [] : offending(node.items, `${at}[]`)),
  ...(node.anyOf ?? []).flatMap((child: any, index: number) => offending(child, `${at}|${index}`))
]

describe("GeminiSchema.convert", () => {
  it("keeps the documented subset, upper-cases types, drops unsupported keywords", () => {
    const input = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $id: "urn:edit",
      type: "object",
      title: "Edit",
      description: "Replace text in a file",
      additionalProperties: false,
      properties: {
        filePath: { type: "string", description: "Absolute path", minLength: 1, format: "uri" },
        when: { type: "string", format: "date-time" },
        mode: { type: "string", enum: ["replace", "append"], default: "replace" },
        count: { type: "integer", minimum: 0, exclusiveMaximum: 10, format: "int32" },
        ratio: { type: "number", maximum: 1, format: "percent", multipleOf: 0.1 },
        dryRun: { type: "boolean", deprecated: true },
        tags: { type: "array", items: { type: "string", pattern: "^[a-z]+$" }, minItems: 1, uniqueItems: true },
        meta: { type: "object", additionalProperties: { type: "string" }, maxProperties: 4 }
      },
      required: ["filePath", "ghost", "mode"],
      patternProperties: { "^x-": {} },
      $comment: "generated"
    }
    const snapshot = JSON.stringify(input)
    expect(GeminiSchema.convert(input)).toEqual({
      type: "OBJECT",
      title: "Edit",
      description: "Replace text in a file",
      properties: {
        filePath: { type: "STRING", description: "Absolute path", minLength: 1 },
        when: { type: "STRING", format: "date-time" },
        mode: { type: "STRING", enum: ["replace", "append"], default: "replace" },
        count: { type: "INTEGER", minimum: 0, format: "int32" },
        ratio: { type: "NUMBER", maximum: 1 },
        dryRun: { type: "BOOLEAN" },
        tags: { type: "ARRAY", items: { type: "STRING", pattern: "^[a-z]+$" }, minItems: 1 },
        // An open object: no properties key (Gemini rejects an empty one).
        meta: { type: "OBJECT", maxProperties: 4 }
      },
      // Only names that are properties.
      required: ["filePath", "mode"]
    })
    // The input is not modified.
    expect(JSON.stringify(input)).toBe(snapshot)
  })

  it("a tool without arguments has no parameters", () => {
    expect(GeminiSchema.convert({ type: "object", properties: {}, additionalProperties: false })).toBeUndefined()
    expect(GeminiSchema.convert({ type: "object" })).toBeUndefined()
    expect(GeminiSchema.convert({})).toEqual({})
  })

  it("nullable: a type list with null, a null branch, a null in enum, OpenAPI nullable", () => {
    expect(
      GeminiSchema.node({
        type: "object",
        properties: {
          a: { type: ["string", "null"], description: "A" },
          b: { anyOf: [{ type: "integer" }, { type: "null" }], description: "B" },
          c: { oneOf: [{ type: "null" }, { $ref: "#/$defs/Point" }] },
          d: { enum: ["x", "y", null] },
          e: { type: "boolean", nullable: true },
          f: { type: "null" }
        },
        $defs: { Point: { type: "object", properties: { x: { type: "number" } }, required: ["x"] } }
      }).properties
    ).toEqual({
      a: { type: "STRING", description: "A", nullable: true },
      b: { type: "INTEGER", description: "B", nullable: true },
      c: { type: "OBJECT", properties: { x: { type: "NUMBER" } }, required: ["x"], nullable: true },
      d: { type: "STRING", enum: ["x", "y"], nullable: true },
      e: { type: "BOOLEAN", nullable: true },
      f: { type: "NULL" }
    })
  })

  it("unions: anyOf / oneOf branches, a multi-type list, const, and enums that are not all strings", () => {
    expect(
      GeminiSchema.node({
        type: "object",
        properties: {
          target: {
            description: "A path or a glob",
            oneOf: [
              { type: "string" },
              { type: "object", properties: { glob: { type: "string" } }, required: ["glob"] }
            ]
          },
          size: { type: ["integer", "string"], description: "Bytes, or a size like 2k" },
          kind: { const: "file" },
          level: { type: "integer", enum: [1, 2, 3] },
          mixed: { enum: ["a", 1] }
        }
      }).properties
    ).toEqual({
      target: {
        anyOf: [{ type: "STRING" }, { type: "OBJECT", properties: { glob: { type: "STRING" } }, required: ["glob"] }],
        description: "A path or a glob"
      },
      size: { anyOf: [{ type: "INTEGER" }, { type: "STRING" }], description: "Bytes, or a size like 2k" },
      kind: { type: "STRING", enum: ["file"] },
      // Gemini enums are strings: other values are not representable, the type still constrains.
      level: { type: "INTEGER" },
      mixed: {}
    })
  })

  it("allOf is merged into one node", () => {
    expect(
      GeminiSchema.node({
        allOf: [
          { type: "object", properties: { a: { type: "string" } }, required: ["a"], description: "first" },
          { properties: { b: { type: "number" }, a: { type: "integer" } }, required: ["b"], description: "second" }
        ]
      })
    ).toEqual({
      type: "OBJECT",
      description: "first",
      properties: { a: { type: "STRING" }, b: { type: "NUMBER" } },
      required: ["a", "b"]
    })
  })

  it("references: $defs and definitions inlined with their siblings winning; recursion and dangling refs stop", () => {
    const converted = GeminiSchema.node({
      type: "object",
      properties: {
        todo: { $ref: "#/$defs/Todo", description: "The item to add" },
        legacy: { $ref: "#/definitions/Legacy" },
        missing: { $ref: "#/$defs/Nope", description: "kept" },
        remote: { $ref: "https://example.test/schema.json" }
      },
      $defs: {
        Todo: {
          type: "object",
          description: "A todo",
          properties: {
            content: { type: "string" },
            status: { $ref: "#/$defs/Status" },
            children: { type: "array", items: { $ref: "#/$defs/Todo" } }
          },
          required: ["content", "status"]
        },
        Status: { type: "string", enum: ["pending", "done"] }
      },
      definitions: { Legacy: { type: "array", items: [{ type: "number" }, { type: "string" }], maxItems: 2 } }
    })
    expect(converted.properties).toEqual({
      todo: {
        type: "OBJECT",
        description: "The item to add",
        properties: {
          content: { type: "STRING" },
          status: { type: "STRING", enum: ["pending", "done"] },
          // The recursive reference is not followed again: an unconstrained item.
          children: { type: "ARRAY", items: {} }
        },
        required: ["content", "status"]
      },
      legacy: { type: "ARRAY", items: { type: "NUMBER" }, maxItems: 2 },
      missing: { description: "kept" },
      remote: {}
    })
  })

  it("types are inferred when missing", () => {
    expect(
      GeminiSchema.node({
        properties: {
          list: { items: { type: "string" } },
          tuple: { prefixItems: [{ type: "boolean" }] },
          pick: { enum: ["a", "b"] },
          anything: { description: "any value" }
        }
      })
    ).toEqual({
      type: "OBJECT",
      properties: {
        list: { type: "ARRAY", items: { type: "STRING" } },
        tuple: { type: "ARRAY", items: { type: "BOOLEAN" } },
        pick: { type: "STRING", enum: ["a", "b"] },
        anything: { description: "any value" }
      }
    })
  })
})

effect.effect("every built-in tool's input schema converts to Gemini's subset", () =>
  Effect.gen(function* () {
    const tools = yield* BuiltinTools.make()
    expect(tools.map((tool) => tool.name)).toEqual([...BuiltinTools.names])
    for (const tool of tools) {
      const parameters = GeminiSchema.convert(tool.inputSchema)
      expect(parameters, tool.name).toMatchObject({ type: "OBJECT" })
      expect(offending(parameters ?? {}), tool.name).toEqual([])
      // Every required name survives: the model is told the same obligations.
      expect(parameters?.required ?? [], tool.name).toEqual(tool.inputSchema.required ?? [])
    }
  }).pipe(Effect.provide(NodeFileSystem.layer))
)
