export * as SessionInputHandlers from "./session-input.js"

import { SessionCommand, SessionRevert, SessionRunner } from "@opencode-ai/core"
import type { SessionInputApi } from "@opencode-ai/protocol"
import type { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"

/**
 * `POST /api/session/{sessionID}/prompt`: admits the prompt durably into the session's inbox, then
 * (unless `resume: false`) wakes the session's drain. The wake is advisory: the response does not wait
 * for any Step, and an admission is never lost if the wake coalesces into a running drain. A revert
 * staged in the session is committed once the prompt is admitted and before the session is woken, so
 * the prompt continues from the reverted history; a refused prompt leaves it staged. A prompt whose
 * text is `/name arguments` naming a custom command runs it (SessionCommand): the expansion is
 * admitted, or for a subtask the typed text is, and then the session is woken by the subtask's
 * result instead of now.
 */
export const prompt = ({
  path,
  payload
}: {
  readonly path: { readonly sessionID: Identifier.SessionID }
  readonly payload: SessionInputApi.PromptPayload
}) =>
  Effect.gen(function* () {
    const commands = yield* SessionCommand.Service
    const revert = yield* SessionRevert.Service
    const prompted = yield* commands.prompt(path.sessionID, {
      id: payload.id,
      prompt: payload.prompt,
      delivery: payload.delivery
    })
    // After admission (a refused prompt leaves the revert staged), before anything can promote it.
    yield* revert.commitStaged(path.sessionID)
    if (payload.resume !== false && prompted.wake) yield* (yield* SessionRunner.Service).wake(path.sessionID)
    return { data: prompted.admitted }
  })
