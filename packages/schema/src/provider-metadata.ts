export * as ProviderMetadata from "./provider-metadata.js"

import { Schema } from "effect"
import { FreeFormObject } from "./free-form.js"

/**
 * Native Continuation Metadata: opaque, provider-shaped data keyed by provider (for example a
 * reasoning signature or a provider-hosted item id). It is stored with the content it belongs to and
 * replayed only to the exact provider and model that produced it; nothing else reads it.
 */
export const LLMProviderMetadata = Schema.Record({ key: Schema.String, value: FreeFormObject }).annotations({
  identifier: "LLMProviderMetadata"
})
export type LLMProviderMetadata = typeof LLMProviderMetadata.Type
