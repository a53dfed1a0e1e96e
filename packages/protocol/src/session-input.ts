export * as SessionInputApi from "./session-input.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { AdmittedPrompt, Errors, Identifier } from "@opencode-ai/schema"
import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/**
 * `{id?, prompt, delivery?, resume?}`: `id` is the user message the prompt becomes (and makes the
 * request idempotent), `delivery` defaults to `steer`, and `resume: false` admits without waking
 * execution (omitted: admit, then wake the session; the wake is advisory). `prompt.format` is our
 * extension (see `ContractExtension` in the schema package): a JSON Schema output format asks for a
 * Structured Output.
 */
export const PromptPayload = Schema.Struct({
  id: Schema.optional(Identifier.SessionMessageID),
  prompt: AdmittedPrompt.PromptInput,
  delivery: Schema.optional(AdmittedPrompt.Delivery),
  resume: Schema.optional(Schema.Boolean)
}).annotations(strict)
export interface PromptPayload extends Schema.Schema.Type<typeof PromptPayload> {}

/** The operation's OpenAPI description: what the prompt body adds to the upstream contract. */
export const description =
  "Admits a prompt durably and wakes the session. `delivery: steer` (default) joins the running work at the " +
  "next Step; `queue` waits for the session to settle first. Idempotent by message id: repeating a prompt " +
  "with the same id admits it once (with different content, a 409). A text `/name arguments` that names a custom " +
  "command (`GET /api/command`) runs it: its template is expanded and admitted instead, or with `subtask: true` it " +
  "runs in a child session whose result is then handed back. Extension of the upstream V2 contract: `prompt.format` " +
  '(`{"type":"text"}` or `{"type":"json_schema","schema":{...},"retryCount"?:n}`) asks for a Structured ' +
  "Output: the model must call the `StructuredOutput` tool with an object that validates against `schema` " +
  "(a JSON Schema whose root is `type: object`, at most 64 KiB as JSON; a schema that does not compile is a " +
  "400 InvalidRequestError). The validated object becomes the assistant message's `structured`; after " +
  "`retryCount` retries (default 2), or a reply without the call, the step fails with a StructuredOutputError."

/**
 * `POST /api/session/{sessionID}/prompt`: durably admits a prompt into the session's inbox and answers
 * with the Admitted Prompt. Idempotent by `id`; the same `id` with different content (its format
 * included) is a 409 ConflictError. An attachment that cannot be resolved, or a `format.schema` that
 * is not a usable JSON Schema, is a 400 InvalidRequestError.
 */
export const prompt = HttpApiEndpoint.post("prompt", "/api/session/:sessionID/prompt")
  .setPath(SessionPath)
  .setPayload(PromptPayload)
  .addSuccess(Schema.Struct({ data: AdmittedPrompt.SessionInputAdmitted }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .annotate(OpenApi.Identifier, "v2.session.prompt")
  .annotate(OpenApi.Summary, "Prompt a session")
  .annotate(OpenApi.Description, description)
