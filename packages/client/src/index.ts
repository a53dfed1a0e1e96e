/**
 * `@opencode-ai/client`: the generated Promise client of the OpenCode V2 API. Zero Effect at run time:
 * this entry imports nothing from `effect`, `@effect/*` or `@opencode-ai/*`.
 */
export { createOpencodeClient, type OpencodeClient } from "./generated/client.js"
export { ClientError, type ClientErrorReason, isClientError } from "./generated/client-error.js"
export * from "./generated/guards.js"
export type * from "./generated/types.js"
export type { ClientOptions, RequestOptions } from "./transport.js"
