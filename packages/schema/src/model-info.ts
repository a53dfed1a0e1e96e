export * as ModelInfo from "./model-info.js"

import { Schema } from "effect"
import { FreeFormObject } from "./free-form.js"

/**
 * How a model is reached: through an AI SDK package, or through the runtime's own adapter.
 * `id` is the model's name on the provider's API, which may differ from the catalog id.
 */
export const ModelApi = Schema.Union(
  Schema.Struct({
    id: Schema.String,
    type: Schema.Literal("aisdk"),
    package: Schema.String,
    url: Schema.optional(Schema.String),
    settings: Schema.optional(FreeFormObject)
  }),
  Schema.Struct({
    id: Schema.String,
    type: Schema.Literal("native"),
    url: Schema.optional(Schema.String),
    settings: FreeFormObject
  })
).annotations({ identifier: "ModelApi" })
export type ModelApi = typeof ModelApi.Type

/** Whether the model can call tools, and the input and output modalities it accepts and produces. */
export const ModelCapabilities = Schema.Struct({
  tools: Schema.Boolean,
  input: Schema.Array(Schema.String),
  output: Schema.Array(Schema.String)
}).annotations({ identifier: "ModelCapabilities" })
export interface ModelCapabilities extends Schema.Schema.Type<typeof ModelCapabilities> {}

/**
 * A price list, per million tokens, for input, output and cache reads and writes. With a `tier`,
 * it applies once the context exceeds `tier.size` tokens.
 */
export const ModelCost = Schema.Struct({
  tier: Schema.optional(Schema.Struct({ type: Schema.Literal("context"), size: Schema.Int })),
  input: Schema.Number,
  output: Schema.Number,
  cache: Schema.Struct({ read: Schema.Number, write: Schema.Number })
}).annotations({ identifier: "ModelCost" })
export interface ModelCost extends Schema.Schema.Type<typeof ModelCost> {}

/**
 * A model of the catalog (`GET /api/model`): identity, how to reach it, what it can do, request
 * additions (with the selected `variant`), the available variants, release date, prices, status,
 * whether it is enabled, and its token limits (`context` and `output`, optionally `input`).
 */
export const ModelV2Info = Schema.Struct({
  id: Schema.String,
  providerID: Schema.String,
  family: Schema.optional(Schema.String),
  name: Schema.String,
  api: ModelApi,
  capabilities: ModelCapabilities,
  request: Schema.Struct({
    headers: Schema.Record({ key: Schema.String, value: Schema.String }),
    body: FreeFormObject,
    variant: Schema.optional(Schema.String)
  }),
  variants: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      headers: Schema.Record({ key: Schema.String, value: Schema.String }),
      body: FreeFormObject
    })
  ),
  time: Schema.Struct({ released: Schema.Number }),
  cost: Schema.Array(ModelCost),
  status: Schema.Literal("alpha", "beta", "deprecated", "active"),
  enabled: Schema.Boolean,
  limit: Schema.Struct({
    context: Schema.Int,
    input: Schema.optional(Schema.Int),
    output: Schema.Int
  })
}).annotations({ identifier: "ModelV2Info" })
export interface ModelV2Info extends Schema.Schema.Type<typeof ModelV2Info> {}
