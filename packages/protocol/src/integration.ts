export * as IntegrationGroup from "./integration.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Location } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/**
 * A point in time in epoch milliseconds. Always a finite number on this API; documented as the
 * contract documents it (a number, or the names of the non-finite values its encoder admits).
 */
export const Instant = Schema.Number.annotations({
  jsonSchema: {
    anyOf: [
      { type: "number" },
      { type: "string", enum: ["NaN"] },
      { type: "string", enum: ["Infinity"] },
      { type: "string", enum: ["-Infinity"] },
      { type: "string", enum: ["Infinity", "-Infinity", "NaN"] }
    ]
  }
})

/** When a condition on an earlier prompt's answer holds. */
export const IntegrationWhen = Schema.Struct({
  key: Schema.String,
  op: Schema.Literal("eq", "neq"),
  value: Schema.String
}).annotations({ identifier: "IntegrationWhen" })

/** A free-text question an OAuth method asks before it starts (its answer goes in `inputs`). */
export const IntegrationTextPrompt = Schema.Struct({
  type: Schema.Literal("text"),
  key: Schema.String,
  message: Schema.String,
  placeholder: Schema.optional(Schema.String),
  when: Schema.optional(IntegrationWhen)
}).annotations({ identifier: "IntegrationTextPrompt" })

/** A choice an OAuth method asks for before it starts (its answer goes in `inputs`). */
export const IntegrationSelectPrompt = Schema.Struct({
  type: Schema.Literal("select"),
  key: Schema.String,
  message: Schema.String,
  options: Schema.Array(
    Schema.Struct({ label: Schema.String, value: Schema.String, hint: Schema.optional(Schema.String) })
  ),
  when: Schema.optional(IntegrationWhen)
}).annotations({ identifier: "IntegrationSelectPrompt" })

/** Connect by OAuth with the method `id` (`connect/oauth`). */
export const IntegrationOAuthMethod = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("oauth"),
  label: Schema.String,
  prompts: Schema.optional(Schema.Array(Schema.Union(IntegrationTextPrompt, IntegrationSelectPrompt)))
}).annotations({ identifier: "IntegrationOAuthMethod" })

/** Connect by storing an API key (`connect/key`). */
export const IntegrationKeyMethod = Schema.Struct({
  type: Schema.Literal("key"),
  label: Schema.optional(Schema.String)
}).annotations({ identifier: "IntegrationKeyMethod" })

/** Connect by setting one of these environment variables before the server starts. */
export const IntegrationEnvMethod = Schema.Struct({
  type: Schema.Literal("env"),
  names: Schema.Array(Schema.String)
}).annotations({ identifier: "IntegrationEnvMethod" })

export const IntegrationMethod = Schema.Union(
  IntegrationOAuthMethod,
  IntegrationKeyMethod,
  IntegrationEnvMethod
).annotations({ identifier: "IntegrationMethod" })

/** A stored credential (its ID and label; never the secret). */
export const ConnectionCredentialInfo = Schema.Struct({
  type: Schema.Literal("credential"),
  id: Schema.String,
  label: Schema.String
}).annotations({ identifier: "ConnectionCredentialInfo" })

/** An environment variable that holds a key. */
export const ConnectionEnvInfo = Schema.Struct({
  type: Schema.Literal("env"),
  name: Schema.String
}).annotations({ identifier: "ConnectionEnvInfo" })

export const ConnectionInfo = Schema.Union(ConnectionCredentialInfo, ConnectionEnvInfo).annotations({
  identifier: "ConnectionInfo"
})

/** A provider that can be connected: how, and the connections it has. */
export const IntegrationInfo = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  methods: Schema.Array(IntegrationMethod),
  connections: Schema.Array(ConnectionInfo)
}).annotations({ identifier: "IntegrationInfo" })
export interface IntegrationInfo extends Schema.Schema.Type<typeof IntegrationInfo> {}

const AttemptTime = Schema.Struct({ created: Instant, expires: Instant })

/** A started OAuth attempt: where the user goes, and whether the attempt completes by itself. */
export const IntegrationAttempt = Schema.Struct({
  attemptID: Schema.String,
  url: Schema.String,
  instructions: Schema.String,
  mode: Schema.Literal("auto", "code"),
  time: AttemptTime
}).annotations({ identifier: "IntegrationAttempt" })

/** An OAuth attempt's state. */
export const IntegrationAttemptStatus = Schema.Union(
  Schema.Struct({ status: Schema.Literal("pending"), time: AttemptTime }),
  Schema.Struct({ status: Schema.Literal("complete"), time: AttemptTime }),
  Schema.Struct({ status: Schema.Literal("failed"), message: Schema.String, time: AttemptTime }),
  Schema.Struct({ status: Schema.Literal("expired"), time: AttemptTime })
).annotations({ identifier: "IntegrationAttemptStatus" })

export const IntegrationPath = Schema.Struct({ integrationID: Schema.String })
export const AttemptPath = Schema.Struct({ attemptID: Schema.String })

export const ConnectKeyPayload = Schema.Struct({
  key: Schema.String,
  label: Schema.optional(Schema.String)
}).annotations(strict)

export const ConnectOAuthPayload = Schema.Struct({
  methodID: Schema.String,
  inputs: Schema.Record({ key: Schema.String, value: Schema.String }),
  label: Schema.optional(Schema.String)
}).annotations(strict)

export const CompletePayload = Schema.Struct({ code: Schema.optional(Schema.String) }).annotations(strict)

/**
 * `GET /api/integration`: every provider a credential can be connected to (the model database's and
 * the config's, configured ones first), with its methods and connections.
 */
export const list = HttpApiEndpoint.get("list", "/api/integration")
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Struct({ location: Location.LocationInfo, data: Schema.Array(IntegrationInfo) }))
  .annotate(OpenApi.Identifier, "v2.integration.list")
  .annotate(OpenApi.Summary, "List integrations")
  .annotate(
    OpenApi.Description,
    "Every provider a credential can be connected to, with the ways to connect it (OAuth methods the config declares, an API key, environment variables) and its current connections. Secrets never appear."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/integration/{integrationID}`: one integration; 400 when there is none by that ID. */
export const get = HttpApiEndpoint.get("get", "/api/integration/:integrationID")
  .setPath(IntegrationPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Struct({ location: Location.LocationInfo, data: IntegrationInfo }))
  .annotate(OpenApi.Identifier, "v2.integration.get")
  .annotate(OpenApi.Summary, "Get an integration")
  .annotate(
    OpenApi.Description,
    "One integration with its methods and connections; an unknown integration ID is an InvalidRequestError."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/**
 * `POST /api/integration/{integrationID}/connect/key`: stores an API key as the provider's credential
 * (replacing the one it had); the provider is offered at the next request.
 */
export const connectKey = HttpApiEndpoint.post("connectKey", "/api/integration/:integrationID/connect/key")
  .setPath(IntegrationPath)
  .setUrlParams(LocationQuery)
  .setPayload(ConnectKeyPayload)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.integration.connect.key")
  .annotate(OpenApi.Summary, "Connect an integration with an API key")
  .annotate(
    OpenApi.Description,
    "Stores the key in the server's credentials file (mode 0600) as the provider's credential, replacing any it had; the provider and its models are offered from the next request. The key is never returned."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `POST /api/integration/{integrationID}/connect/oauth`: starts an OAuth attempt with one of its methods. */
export const connectOauth = HttpApiEndpoint.post("connectOauth", "/api/integration/:integrationID/connect/oauth")
  .setPath(IntegrationPath)
  .setUrlParams(LocationQuery)
  .setPayload(ConnectOAuthPayload)
  .addSuccess(Schema.Struct({ location: Location.LocationInfo, data: IntegrationAttempt }))
  .annotate(OpenApi.Identifier, "v2.integration.connect.oauth")
  .annotate(OpenApi.Summary, "Start an OAuth attempt")
  .annotate(
    OpenApi.Description,
    "Starts signing in with the OAuth method `methodID`: the user opens `url`. Mode `auto` completes by itself (loopback redirect or device approval); mode `code` waits for the code through `attempt/{attemptID}/complete`. Poll `attempt/{attemptID}` for the outcome."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/integration/attempt/{attemptID}`: an attempt's status. */
export const attemptStatus = HttpApiEndpoint.get("attemptStatus", "/api/integration/attempt/:attemptID")
  .setPath(AttemptPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Struct({ location: Location.LocationInfo, data: IntegrationAttemptStatus }))
  .annotate(OpenApi.Identifier, "v2.integration.attempt.status")
  .annotate(OpenApi.Summary, "Get an OAuth attempt's status")
  .annotate(
    OpenApi.Description,
    "Pending, complete (the credential is stored), failed (with the reason) or expired. An unknown or cancelled attempt is an InvalidRequestError."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `DELETE /api/integration/attempt/{attemptID}`: cancels an attempt. */
export const attemptCancel = HttpApiEndpoint.del("attemptCancel", "/api/integration/attempt/:attemptID")
  .setPath(AttemptPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.integration.attempt.cancel")
  .annotate(OpenApi.Summary, "Cancel an OAuth attempt")
  .annotate(
    OpenApi.Description,
    "Ends the attempt (its loopback listener or device polling stops) and forgets it; its ID is unknown afterwards."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `POST /api/integration/attempt/{attemptID}/complete`: completes a code-flow attempt with a pasted code. */
export const attemptComplete = HttpApiEndpoint.post("attemptComplete", "/api/integration/attempt/:attemptID/complete")
  .setPath(AttemptPath)
  .setUrlParams(LocationQuery)
  .setPayload(CompletePayload)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.integration.attempt.complete")
  .annotate(OpenApi.Summary, "Complete an OAuth attempt with a code")
  .annotate(
    OpenApi.Description,
    "Exchanges the code the user pasted and stores the credential before answering. A missing code, a device attempt, an attempt no longer pending, or a code the server refuses is an InvalidRequestError."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("integrations")
  .add(list)
  .add(get)
  .add(connectKey)
  .add(connectOauth)
  .add(attemptStatus)
  .add(attemptCancel)
  .add(attemptComplete)
  .annotate(OpenApi.Title, "integrations")
  .annotate(ClientProjection.Namespace, "integrations")
