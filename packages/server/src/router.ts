export * as Router from "./router.js"

import { HttpApi, HttpApiBuilder } from "@effect/platform"
import { Assembly, type Core } from "@opencode-ai/core"
import { Context, Effect, Layer, type Option } from "effect"
import { ServerApi } from "./api.js"
import { ApiReferencePage } from "./api-reference-page.js"
import { AgentHandlers } from "./handlers/agent.js"
import { CommandHandlers } from "./handlers/command.js"
import { CredentialHandlers } from "./handlers/credential.js"
import { EventHandlers } from "./handlers/event.js"
import { FileSystemHandlers } from "./handlers/fs.js"
import { HealthHandlers } from "./handlers/health.js"
import { InstructionHandlers } from "./handlers/instructions.js"
import { IntegrationHandlers } from "./handlers/integration.js"
import { LocationHandlers } from "./handlers/location.js"
import { McpHandlers } from "./handlers/mcp.js"
import { ModelHandlers } from "./handlers/model.js"
import { PermissionHandlers } from "./handlers/permission.js"
import { ProviderHandlers } from "./handlers/provider.js"
import { PtyHandlers } from "./handlers/pty.js"
import { QuestionHandlers } from "./handlers/question.js"
import { ReferenceHandlers } from "./handlers/reference.js"
import { SessionHandlers } from "./handlers/session.js"
import { SkillHandlers } from "./handlers/skill.js"
import { Inspector } from "./inspector.js"
import { AuthorizationLive } from "./middleware/authorization.js"
import { BasicAuth } from "./middleware/basic-auth.js"
import { LocationMiddleware } from "./middleware/location.js"
import { RequestErrors } from "./middleware/request-errors.js"
import { RequestOrigin } from "./middleware/request-origin.js"
import { StreamToken } from "./middleware/stream-token.js"
import { MetricsRoute } from "./observability/metrics-route.js"
import { OpenApiDocumentRoute } from "./openapi-document-route.js"
import { PtyEnvironment } from "./pty-environment.js"
import { PtyTickets } from "./pty-tickets.js"
import { EventStreams } from "./sse/event-streams.js"

export interface Options {
  /** Basic auth credentials; `None` leaves every route open. */
  readonly auth: Option.Option<BasicAuth.Credentials>
  /** The SSE streams' heartbeat period and live buffer size (defaults: 15 s, `LiveBus.defaultCapacity`). */
  readonly eventStreams?: EventStreams.Options | undefined
  /** Allowed origins and the listener whose `Host` is checked; none for the embedded host. */
  readonly origin?: RequestOrigin.Options | undefined
  /** The host's PTY Environment overlay; default none (a standalone server). */
  readonly ptyEnvironment?: PtyEnvironment.Interface | undefined
  /** The PTY connect tickets' lifetime (default `PtyTickets.defaultLifetime`). */
  readonly ptyTickets?: PtyTickets.Options | undefined
  /** Serve the live session inspector page at `/` (see Inspector); default off (the embedded host). */
  readonly ui?: boolean | undefined
}

/**
 * The assembled OpenCode API: every handler group, the concrete middleware, the OpenAPI document
 * at `/doc` and its reference page at `/doc/ui`, and with `ui` the inspector page at `/`. The network
 * listener and the embedded host both serve exactly this layer; it needs the Core services
 * (`Core.layer`) and nothing else.
 *
 * Built as an Assembly through the graph's MemoMap: the routes join the `HttpApiBuilder.Router` the
 * host serves, which the handler groups reach as a memoised layer. The streams, tickets and
 * middleware services are this router's own: closing it ends its open streams.
 */
export const layer = (options: Options): Layer.Layer<HttpApi.Api, never, Core.Services> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const { add, context } = yield* Assembly.make(yield* Layer.CurrentMemoMap)
      yield* add(BasicAuth.layer(options.auth))
      yield* add(RequestOrigin.layer(options.origin ?? {}))
      yield* add(StreamToken.layer)
      yield* add(PtyTickets.layer(options.ptyTickets))
      yield* add(EventStreams.layer(options.eventStreams))
      yield* add(PtyEnvironment.layer(options.ptyEnvironment))
      // The handler groups of Location-scoped endpoints are built with the concrete Location key.
      yield* add(LocationMiddleware.layer)
      yield* add(AuthorizationLive.layer)
      yield* add(HealthHandlers.layer)
      yield* add(LocationHandlers.layer)
      yield* add(SessionHandlers.layer)
      yield* add(EventHandlers.layer)
      yield* add(InstructionHandlers.layer)
      yield* add(AgentHandlers.layer)
      yield* add(ModelHandlers.layer)
      yield* add(ProviderHandlers.layer)
      yield* add(PermissionHandlers.layer)
      yield* add(QuestionHandlers.layer)
      yield* add(SkillHandlers.layer)
      yield* add(CommandHandlers.layer)
      yield* add(ReferenceHandlers.layer)
      yield* add(McpHandlers.layer)
      yield* add(FileSystemHandlers.layer)
      yield* add(IntegrationHandlers.layer)
      yield* add(CredentialHandlers.layer)
      yield* add(PtyHandlers.layer)
      yield* add(HttpApiBuilder.api(ServerApi.api))
      // The OpenAPI document, made on its first request.
      yield* add(OpenApiDocumentRoute.layer)
      // The platform's Scalar page, its script inlined, loaded on the page's first request.
      yield* add(ApiReferencePage.layer)
      yield* add(Inspector.layer(options.ui ?? false))
      // The Prometheus exposition (an extension outside the contract), behind the same guard.
      yield* add(MetricsRoute.layer)
      yield* add(RequestErrors.layer)
      return Context.pick(HttpApi.Api)(context() as Context.Context<HttpApi.Api>)
    })
  )
