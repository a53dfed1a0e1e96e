export * as Provider from "./provider.js"

import { Schema } from "effect"
import { FreeFormObject } from "./free-form.js"

/** Extra HTTP headers and body fields merged into every request sent to a provider or for an agent. */
export const ProviderRequest = Schema.Struct({
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  body: FreeFormObject
}).annotations({ identifier: "ProviderRequest" })
export interface ProviderRequest extends Schema.Schema.Type<typeof ProviderRequest> {}

/** A provider reached through an AI SDK package (`package`), optionally at a custom `url`. */
export const ProviderAISDK = Schema.Struct({
  type: Schema.Literal("aisdk"),
  package: Schema.String,
  url: Schema.optional(Schema.String),
  settings: Schema.optional(FreeFormObject)
}).annotations({ identifier: "ProviderAISDK" })
export interface ProviderAISDK extends Schema.Schema.Type<typeof ProviderAISDK> {}

/** A provider spoken to by the runtime's own adapter; `settings` configures that adapter. */
export const ProviderNative = Schema.Struct({
  type: Schema.Literal("native"),
  url: Schema.optional(Schema.String),
  settings: FreeFormObject
}).annotations({ identifier: "ProviderNative" })
export interface ProviderNative extends Schema.Schema.Type<typeof ProviderNative> {}

/** How a provider is reached, discriminated by `type`. */
export const ProviderApi = Schema.Union(ProviderAISDK, ProviderNative).annotations({ identifier: "ProviderApi" })
export type ProviderApi = typeof ProviderApi.Type

/**
 * A configured provider (`GET /api/provider`): its id and display name, how it is reached, and the
 * request additions applied to all its models. `integrationID` names the integration that supplies
 * its credentials; a `disabled` provider is listed but not used. Credentials never appear here.
 *
 * `disabledReason` is an extension of the upstream contract (absent from its `ProviderV2Info`): with
 * `disabled: true`, why this runtime cannot use the provider (e.g. no adapter for its package). A
 * client that does not know it ignores it.
 */
export const ProviderV2Info = Schema.Struct({
  id: Schema.String,
  integrationID: Schema.optional(Schema.String),
  name: Schema.String,
  disabled: Schema.optional(Schema.Boolean),
  disabledReason: Schema.optional(Schema.String),
  api: ProviderApi,
  request: ProviderRequest
}).annotations({ identifier: "ProviderV2Info" })
export interface ProviderV2Info extends Schema.Schema.Type<typeof ProviderV2Info> {}
