/**
 * `@opencode-ai/client/effect`: the generated Effect client of the OpenCode V2 API over `HttpApiClient`,
 * and the decoded datatypes it speaks, re-exported from `@opencode-ai/schema` so callers need no other
 * package. Imports only `effect`, `@effect/platform`, `@effect/experimental` (its `Sse` parser),
 * `@opencode-ai/protocol` and `@opencode-ai/schema`.
 */

export { Cursor, Errors, Event, Identifier, InstanceEvent, Location, Model, Session } from "@opencode-ai/schema"
export * as OpencodeClient from "./generated/opencode-client.js"
export { Page } from "./page.js"
export * as Streaming from "./streaming.js"
