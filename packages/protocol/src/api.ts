export * as Api from "./api.js"

import { HttpApi, type HttpApiEndpoint, type HttpApiGroup, type HttpApiMiddleware, OpenApi } from "@effect/platform"
import { type Context, Option, Schema, SchemaAST } from "effect"
import { AgentGroup } from "./agent.js"
import { ApiDocumentation } from "./api-documentation.js"
import { CommandGroup } from "./command.js"
import { CredentialGroup } from "./credential.js"
import { InvalidRequestError } from "./errors.js"
import { EventGroup } from "./event.js"
import { FileSystemGroup } from "./fs.js"
import { HealthGroup } from "./health.js"
import { InstructionGroup } from "./instructions.js"
import { IntegrationGroup } from "./integration.js"
import { LocationGroup } from "./location.js"
import { McpGroup } from "./mcp.js"
import { Authorization, type LocationKey, LocationTransport } from "./middleware.js"
import { ModelGroup } from "./model.js"
import { PermissionGroup } from "./permission.js"
import { ProviderGroup } from "./provider.js"
import { PtyGroup } from "./pty.js"
import { QuestionGroup } from "./question.js"
import { ReferenceGroup } from "./reference.js"
import { SessionGroup } from "./session.js"
import { SkillGroup } from "./skill.js"

/**
 * Every undecodable request is reported as `InvalidRequestError` (400) on this API, so the
 * framework's default `HttpApiDecodeError` is replaced as the API-wide error before any group is
 * added. The server's error middleware performs the same translation at run time.
 */
const base = (() => {
  const api = HttpApi.make("opencode")
  return Object.assign(Object.create(Object.getPrototypeOf(api)), api, {
    errorSchema: InvalidRequestError
  }) as HttpApi.HttpApi<"opencode", never, typeof InvalidRequestError.Type>
})()

/**
 * Every group as declared, with the Authorization middleware on every route and the document's
 * annotations, before any Location key is placed (see {@link make}).
 */
const declared = base
  .add(HealthGroup.group)
  .add(LocationGroup.group)
  .add(SessionGroup.group)
  .add(InstructionGroup.group)
  .add(EventGroup.group)
  .add(AgentGroup.group)
  .add(ModelGroup.group)
  .add(ProviderGroup.group)
  .add(PermissionGroup.group)
  .add(QuestionGroup.group)
  .add(SkillGroup.group)
  .add(CommandGroup.group)
  .add(ReferenceGroup.group)
  .add(McpGroup.group)
  .add(FileSystemGroup.group)
  .add(IntegrationGroup.group)
  .add(CredentialGroup.group)
  .add(PtyGroup.group)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "OpenCode V2 API")
  .annotate(OpenApi.Version, "1.18.33")
  .annotate(
    OpenApi.Description,
    "The HTTP API of `opencode serve`: durable agent sessions (prompts, their Steps, tools and permissions), their event streams, and the catalogs they run on."
  )
  .annotate(OpenApi.License, { name: "MIT" })
  .annotate(OpenApi.Servers, ApiDocumentation.servers)
  .annotate(OpenApi.Transform, ApiDocumentation.complete)

/** Whether an endpoint's decoded query carries the `location` member (`LocationQuery`). */
type TakesLocation<E> =
  E extends HttpApiEndpoint.HttpApiEndpoint<
    infer _N,
    infer _M,
    infer _P,
    infer U,
    infer _Pl,
    infer _H,
    infer _S,
    infer _E,
    infer _R,
    infer _RE
  >
    ? [U] extends [never]
      ? false
      : "location" extends keyof U
        ? true
        : false
    : false

/** An endpoint with the Location key `L` added when it takes the `location` query, as `endpoint.middleware(L)` types it. */
type PlaceOnEndpoint<E, I extends HttpApiMiddleware.HttpApiMiddleware.AnyId> =
  E extends HttpApiEndpoint.HttpApiEndpoint<
    infer N,
    infer M,
    infer P,
    infer U,
    infer Pl,
    infer H,
    infer S,
    infer Er,
    infer R,
    infer RE
  >
    ? TakesLocation<E> extends true
      ? HttpApiEndpoint.HttpApiEndpoint<
          N,
          M,
          P,
          U,
          Pl,
          H,
          S,
          // a Location key fails only with InvalidRequestError, whose schema needs no context
          Er | typeof InvalidRequestError.Type,
          R | I,
          RE
        >
      : E
    : never

/** A group whose Location-scoped endpoints carry the key `I`. */
type PlaceOnGroup<G, I extends HttpApiMiddleware.HttpApiMiddleware.AnyId> =
  G extends HttpApiGroup.HttpApiGroup<infer Id, infer E, infer Er, infer R, infer Top>
    ? HttpApiGroup.HttpApiGroup<Id, PlaceOnEndpoint<E, I>, Er, R, Top>
    : never

/** The OpenCode V2 HTTP API built with the Location key `L` (see {@link make}). */
export type Api<L extends LocationKey> =
  typeof declared extends HttpApi.HttpApi<infer Id, infer G, infer E, infer R>
    ? HttpApi.HttpApi<Id, PlaceOnGroup<G, InstanceType<L>>, E, R>
    : never

/**
 * Whether an endpoint takes the `location` query: its decoded query schema has a `location` member,
 * as every endpoint that declares `LocationQuery` (alone or merged into its own query) does. A Location
 * in a body (`session.create`) or none at all (the event streams) does not count.
 */
const takesLocation = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): boolean =>
  Option.match(endpoint.urlParamsSchema, {
    onNone: () => false,
    onSome: (schema) =>
      SchemaAST.getPropertySignatures(Schema.typeSchema(schema).ast).some((p) => p.name === "location")
  })

/** A copy of `group` whose Location-scoped endpoints carry `key`; everything else is unchanged. */
const placeLocation = (group: HttpApiGroup.HttpApiGroup.AnyWithProps, key: LocationKey) => {
  const endpoints = Object.fromEntries(
    Object.entries(group.endpoints).map(([name, endpoint]) => [
      name,
      takesLocation(endpoint) ? endpoint.middleware(key as unknown as Context.Tag<never, never>) : endpoint
    ])
  )
  function PlacedGroup() {}
  Object.setPrototypeOf(PlacedGroup, Object.getPrototypeOf(group))
  return Object.assign(PlacedGroup, {
    identifier: group.identifier,
    topLevel: group.topLevel,
    endpoints,
    errorSchema: group.errorSchema,
    annotations: group.annotations,
    middlewares: group.middlewares
  }) as unknown as HttpApiGroup.HttpApiGroup.AnyWithProps
}

/**
 * Builds the OpenCode V2 HTTP API: every group, the Authorization middleware on every route, and the
 * supplied Location key on exactly the endpoints that take the `location` query. Protocol owns the
 * endpoints and where the key goes; the caller owns the key. The server supplies its concrete key
 * (which resolves the Location and provides it to handlers) to get the authoritative API; clients use
 * {@link OpenCodeApi}, built with the transport-only `LocationTransport`. Paths, operation IDs, codecs,
 * errors and the OpenAPI document do not depend on the key: its one failure is the `InvalidRequestError`
 * every endpoint already declares.
 */
export const make = <L extends LocationKey>(keys: { readonly location: L }): Api<L> => {
  const groups = Object.fromEntries(
    Object.entries(declared.groups).map(([name, group]) => [
      name,
      placeLocation(group as unknown as HttpApiGroup.HttpApiGroup.AnyWithProps, keys.location)
    ])
  )
  return Object.assign(Object.create(Object.getPrototypeOf(declared)), declared, { groups }) as Api<L>
}

/**
 * The OpenCode V2 HTTP API with the transport-only Location key: the clients' projection of the API.
 * Its OpenAPI document and SDK Contract IR equal those of the server's concrete API (tested).
 */
export const OpenCodeApi: Api<typeof LocationTransport> = make({ location: LocationTransport })

/**
 * The operations this API adds beyond the observed upstream contract. Conformance checks every other
 * operation against the reference; these are checked against its conventions instead.
 */
export const extensionOperations: ReadonlySet<string> = new Set([
  "v2.session.instructions.entries.list",
  "v2.session.instructions.entries.put",
  "v2.session.instructions.entries.remove",
  "v2.mcp.list",
  "v2.session.move",
  "v2.session.delete",
  "v2.event.token",
  "v2.agent.generate"
])

/**
 * Statuses some reference operations answer here beyond those the observed contract lists, and why.
 * Conformance checks everything else about these operations against the reference.
 * - the revert operations refuse to change a running session (and `clear` / `commit` refuse when
 *   nothing is staged) with a 409 ConflictError, where the contract lists no conflict;
 * - `fs.read` and `fs.list` answer a missing path with a 404 PathNotFoundError.
 */
export const additionalStatuses: Readonly<Record<string, ReadonlyArray<string>>> = {
  "v2.session.revert.stage": ["409"],
  "v2.session.revert.clear": ["409"],
  "v2.session.revert.commit": ["409"],
  // a path that names nothing is a 404 PathNotFoundError, where the contract lists only 400.
  "v2.fs.read": ["404"],
  "v2.fs.list": ["404"]
}

/**
 * Optional properties some reference operations add to their inline success response, and why.
 * Conformance checks that each is present and optional, removes it, and compares the rest with the
 * reference (which declares these responses closed, `additionalProperties: false`).
 */
export const additionalResponseFields: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "v2.health.get": {
    version:
      "the server's version, so that a client can tell what it talks to without another call (upstream's " +
      "v1 health answer carries it too)"
  }
}
