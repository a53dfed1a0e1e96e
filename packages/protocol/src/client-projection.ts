export * as ClientProjection from "./client-projection.js"

import { Context } from "effect"

/**
 * Codegen annotations: how the generated OpenCode Clients project this API. They change nothing on
 * the wire or in the OpenAPI document; the SDK Contract IR (`scripts/codegen/ir.ts`) reads them and
 * every emitter follows the IR.
 */

/**
 * The consumer-facing namespace of a group in the generated clients (`client.sessions.get(…)`),
 * annotated on each `HttpApiGroup`. The IR refuses a group without one: internal group identifiers
 * never become public client names by accident.
 *
 * The stable naming (settling "session versus sessions"): a namespace is the plural noun of the
 * resource collection its operations address (`sessions`, `events`, `agents`, `models`,
 * `permissions`…), so a call reads "from the sessions, get one" and leaves the singular free for
 * the values consumers hold (`const session = await client.sessions.get({ sessionID })`). A group
 * that addresses one thing rather than a collection keeps that thing's name (`health`, `location`,
 * `reference`, `mcp`). Operation ids (`v2.session.get`) and routes (`/api/session/…`) are the
 * wire's and stay singular.
 */
export class Namespace extends Context.Tag("@opencode-ai/protocol/ClientProjection/Namespace")<Namespace, string>() {}

/**
 * Marks a cursor-paged list endpoint, whose success is the list envelope `{data, cursor: {previous?,
 * next?}}` and whose query has a `cursor`. The generated clients project it to a Page (`{items,
 * previous?, next?}`) and split its input into an initial query (every query parameter but `cursor`)
 * and a continuation (the cursor, plus only the query parameters named in `continuation`); path
 * parameters go with both. The wire is unchanged.
 */
export interface PageSpec {
  /** The query parameters a continuation may send with its cursor (the server accepts them there). */
  readonly continuation: ReadonlyArray<string>
}

/** The annotation carrying a {@link PageSpec}; see there. */
export class Page extends Context.Tag("@opencode-ai/protocol/ClientProjection/Page")<Page, PageSpec>() {}
