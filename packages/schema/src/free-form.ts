export * as FreeForm from "./free-form.js"

import { Schema } from "effect"

/**
 * A JSON object whose fields the contract deliberately leaves open: tool input and structured tool
 * output, provider request bodies and settings, and the `metadata` bag of envelopes and messages.
 * The reference describes it as `{"type": "object"}` with no properties, so the values are
 * `unknown`: the runtime carries them through unchanged and never interprets them. Arrays, strings
 * and `null` are rejected. (For a value the runtime must itself validate as JSON, use `Json.Value`.)
 */
export const FreeFormObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  jsonSchema: { type: "object" }
})
export type FreeFormObject = typeof FreeFormObject.Type
