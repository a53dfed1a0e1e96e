export * as BuiltinTool from "./builtin-tool.js"

import type { PlatformError } from "@effect/platform/Error"
import { Effect, JSONSchema, ParseResult, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import { ToolRegistry } from "../tool-registry.js"

/** What a built-in tool is made of: its input is an Effect Schema, its JSON Schema derives from it. */
export interface Definition<I> {
  readonly name: string
  readonly description: string
  /** The input; decoding it is the validation (unknown keys are ignored). */
  readonly input: Schema.Schema<I, any, never>
  readonly execute: (
    input: I,
    context: ToolRegistry.CallContext
  ) => Effect.Effect<ToolRegistry.Result, ToolRegistry.ToolFailure>
}

/**
 * The JSON Schema a provider sees for `schema`: draft-07 as `JSONSchema.make` derives it, without the
 * `$schema` marker (providers want a bare object schema). Derived, so it cannot drift from the decoder.
 */
export const jsonSchema = (schema: Schema.Schema<any, any, never>): Record<string, unknown> => {
  const { $schema: _, ...rest } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  return rest
}

/** A readable message for invalid input: each issue with its path, e.g. `["offset"]: Expected ...`. */
const describeIssues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`))
    .join("; ")

/**
 * A Tool from a definition: the call's input is decoded against the schema first, and invalid input
 * settles as a ToolFailure naming the offending fields (the model can correct it and try again).
 */
export const define = <I>(definition: Definition<I>): ToolRegistry.Tool => {
  const decode = Schema.decodeUnknown(definition.input, { errors: "all" })
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: jsonSchema(definition.input),
    execute: (input, context) =>
      decode(input).pipe(
        Effect.mapError(
          (error) =>
            new ToolRegistry.ToolFailure({
              message: `Invalid input for the ${definition.name} tool: ${describeIssues(error)}`
            })
        ),
        Effect.flatMap((decoded) => definition.execute(decoded, context)),
        Traced.withSpan(`BuiltinTool.${definition.name}`, {
          attributes: { sessionID: context.sessionID, callID: context.callID }
        }),
        Effect.annotateLogs({ sessionID: context.sessionID, tool: definition.name })
      )
  }
}

/** Fails the tool with a message the model reads. */
export const fail = (message: string) => new ToolRegistry.ToolFailure({ message })

/** A text-only result. */
export const text = (value: string, structured?: Readonly<Record<string, unknown>>): ToolRegistry.Result =>
  structured === undefined
    ? { content: [{ type: "text", text: value }] }
    : { content: [{ type: "text", text: value }], structured }

/** Whether a file-system error says the path does not exist. */
export const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"

/** A file-system error as a failure the model can act on: what was done, to which path, and why. */
export const fileFailure = (action: string, target: string) => (error: PlatformError) =>
  fail(
    error._tag === "SystemError"
      ? `Cannot ${action} ${target}: ${
          error.reason === "NotFound"
            ? "no such file or directory"
            : error.reason === "PermissionDenied"
              ? "permission denied"
              : error.reason === "AlreadyExists"
                ? "it already exists"
                : error.message
        }`
      : `Cannot ${action} ${target}: ${error.message}`
  )
