export * as SessionInputApi from "./session-input.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { AdmittedPrompt, Errors, Identifier } from "@opencode-ai/schema"
import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/**
 * `{id?, prompt, delivery?, resume?}`: `id` is the user message the prompt becomes (and makes the
 * request idempotent), `delivery` defaults to `steer`, and `resume: false` admits without waking
 * execution (omitted: admit, then wake the session; the wake is advisory).
 */
export const PromptPayload = Schema.Struct({
  id: Schema.optional(Identifier.SessionMessageID),
  prompt: AdmittedPrompt.PromptInput,
  delivery: Schema.optional(AdmittedPrompt.Delivery),
  resume: Schema.optional(Schema.Boolean)
}).annotations(strict)
export interface PromptPayload extends Schema.Schema.Type<typeof PromptPayload> {}

/**
 * `POST /api/session/{sessionID}/prompt`: durably admits a prompt into the session's inbox and answers
 * with the Admitted Prompt. Idempotent by `id`; the same `id` with different content is a 409
 * ConflictError. An attachment that cannot be resolved is a 400 InvalidRequestError.
 */
export const prompt = HttpApiEndpoint.post("prompt", "/api/session/:sessionID/prompt")
  .setPath(SessionPath)
  .setPayload(PromptPayload)
  .addSuccess(Schema.Struct({ data: AdmittedPrompt.SessionInputAdmitted }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .annotate(OpenApi.Identifier, "v2.session.prompt")
  .annotate(OpenApi.Summary, "Prompt a session")
  .annotate(
    OpenApi.Description,
    "Admits a prompt durably and wakes the session. `delivery: steer` (default) joins the running work at the next Step; `queue` waits for the session to settle first. Idempotent by message id: repeating a prompt with the same id admits it once."
  )
