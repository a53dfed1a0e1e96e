export * as SessionInputHandlers from "./session-input.js"

import { SessionInput, SessionRevert, SessionRunner } from "@opencode-ai/core"
import type { SessionInputApi } from "@opencode-ai/protocol"
import type { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"

/**
 * `POST /api/session/{sessionID}/prompt`: admits the prompt durably into the session's inbox, then
 * (unless `resume: false`) wakes the session's drain. The wake is advisory: the response does not wait
 * for any Step, and an admission is never lost if the wake coalesces into a running drain. A revert
 * staged in the session is committed first, so the prompt continues from the reverted history.
 */
export const prompt = ({
  path,
  payload
}: {
  readonly path: { readonly sessionID: Identifier.SessionID }
  readonly payload: SessionInputApi.PromptPayload
}) =>
  Effect.gen(function* () {
    const input = yield* SessionInput.Service
    const revert = yield* SessionRevert.Service
    yield* revert.commitStaged(path.sessionID)
    const data = yield* input.admit(path.sessionID, {
      id: payload.id,
      prompt: payload.prompt,
      delivery: payload.delivery
    })
    if (payload.resume !== false) yield* (yield* SessionRunner.Service).wake(path.sessionID)
    return { data }
  })
