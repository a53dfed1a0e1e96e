export * as ToolContent from "./tool-content.js"

import { Schema } from "effect"

/** Text a tool returns to the model. */
export const ToolTextContent = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
}).annotations({ identifier: "ToolTextContent" })
export interface ToolTextContent extends Schema.Schema.Type<typeof ToolTextContent> {}

/** A file a tool returns to the model, by URI and media type. */
export const ToolFileContent = Schema.Struct({
  type: Schema.Literal("file"),
  uri: Schema.String,
  mime: Schema.String,
  name: Schema.optional(Schema.String)
}).annotations({ identifier: "ToolFileContent" })
export interface ToolFileContent extends Schema.Schema.Type<typeof ToolFileContent> {}

/** One piece of model-visible tool output, discriminated by `type`. */
export const LLMToolContent = Schema.Union(ToolTextContent, ToolFileContent).annotations({
  identifier: "LLMToolContent"
})
export type LLMToolContent = typeof LLMToolContent.Type
