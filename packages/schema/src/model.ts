export * as Model from "./model.js"

import { Schema } from "effect"

/** A model selection: the provider, the model within it and an optional variant. */
export const ModelRef = Schema.Struct({
  id: Schema.String,
  providerID: Schema.String,
  variant: Schema.optional(Schema.String)
}).annotations({ identifier: "ModelRef" })
export interface ModelRef extends Schema.Schema.Type<typeof ModelRef> {}
