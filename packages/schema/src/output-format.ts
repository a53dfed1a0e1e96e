export * as OutputFormat from "./output-format.js"

import { Schema } from "effect"
import { FreeFormObject } from "./free-form.js"

/*
 * Output Format: how a prompt wants the assistant's final answer. `text` (the default when a prompt
 * names none) is an ordinary reply. `json_schema` asks for a Structured Output: while the latest user
 * message has it, the runner offers the model a `StructuredOutput` tool whose input schema is
 * `schema`, requires a tool call, and records the first input that validates as the assistant
 * message's `structured` value (see `SessionMessageAssistant`). The shapes are the upstream
 * contract's components of the same names; a prompt carrying one is our extension of the V2 prompt
 * body (see `ContractExtension`).
 */

/**
 * How many times the model may retry after a call whose input does not validate, when the format
 * names no `retryCount`: 2, so at most 3 calls in all.
 */
export const defaultRetryCount = 2

/** The longest `schema` accepted, as JSON text (UTF-16 code units): 64 KiB. */
export const maxSchemaLength = 64 * 1024

/** An ordinary text reply: what a prompt without a format gets. */
export const OutputFormatText = Schema.Struct({
  type: Schema.Literal("text")
}).annotations({ identifier: "OutputFormatText" })
export interface OutputFormatText extends Schema.Schema.Type<typeof OutputFormatText> {}

/**
 * A Structured Output: the final answer is a JSON object that validates against `schema` (a JSON
 * Schema document whose root describes an object: it becomes a tool's input schema). `retryCount`
 * is how many further calls the model gets after one whose input does not validate (default
 * {@link defaultRetryCount}); once they are used up the Step fails with a `StructuredOutputError`.
 * Admission checks that `schema` compiles and stays within {@link maxSchemaLength}.
 */
export const OutputFormatJsonSchema = Schema.Struct({
  type: Schema.Literal("json_schema"),
  schema: Schema.propertySignature(FreeFormObject).annotations({
    description: `A JSON Schema whose root has \`type: "object"\`; at most ${maxSchemaLength} characters as JSON`
  }),
  retryCount: Schema.optional(Schema.NonNegativeInt).annotations({
    description: `Retries after an output that does not validate; default ${defaultRetryCount}`
  })
}).annotations({ identifier: "OutputFormatJsonSchema" })
export interface OutputFormatJsonSchema extends Schema.Schema.Type<typeof OutputFormatJsonSchema> {}

/** Either format, discriminated by `type` (the contract's `OutputFormat`). */
export const Format = Schema.Union(OutputFormatText, OutputFormatJsonSchema).annotations({
  identifier: "OutputFormat"
})
export type Format = typeof Format.Type

/** The Structured Output a format asks for, if any. */
export const jsonSchema = (format: Format | undefined): OutputFormatJsonSchema | undefined =>
  format?.type === "json_schema" ? format : undefined
