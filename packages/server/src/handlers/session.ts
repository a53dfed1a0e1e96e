export * as SessionHandlers from "./session.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations, SessionDelete, SessionSelection, Sessions } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { JsonBody } from "../json-body.js"
import { SessionEventStream } from "../sse/session-event-stream.js"
import { SessionExecutionHandlers } from "./session-execution.js"
import { SessionHistoryHandlers } from "./session-history.js"
import { SessionInputHandlers } from "./session-input.js"
import { SessionMoveHandlers } from "./session-move.js"
import { SessionRevertHandlers } from "./session-revert.js"
import { SessionSelectionHandlers } from "./session-selection.js"

/** The `sessions` group: protocol requests in, Core operations out, `{data}` envelopes back. */
export const layer = HttpApiBuilder.group(ServerApi.api, "sessions", (handlers) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions.Service
    const locations = yield* Locations.Service
    // `list` answers the stored records as they are (Sessions.listJson): no decode and re-encode per session.
    // `remove` answers 204 once the session, its children and their files are gone (see SessionDelete).
    const deletion = yield* SessionDelete.Service
    // `create` refuses an unknown agent or model (400) as the switches do, before anything is written.
    const selection = yield* SessionSelection.Service
    const events = yield* SessionEventStream.make
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const location = yield* locations.resolve(payload.location)
          yield* selection.check(payload)
          const info = yield* sessions.create({
            location,
            ...(payload.id !== undefined ? { id: payload.id } : {}),
            ...(payload.agent !== undefined ? { agent: payload.agent } : {}),
            ...(payload.model !== undefined ? { model: payload.model } : {})
          })
          return { data: info }
        })
      )
      .handle("list", ({ urlParams }) => Effect.map(sessions.listJson(urlParams), JsonBody.response))
      .handle("get", ({ path }) => Effect.map(sessions.get(path.sessionID), (data) => ({ data })))
      .handle("remove", ({ path }) => Effect.asVoid(deletion.remove(path.sessionID)))
      .handleRaw("events", events)
      .handle("prompt", SessionInputHandlers.prompt)
      .handle("messages", SessionHistoryHandlers.messages)
      .handle("message", SessionHistoryHandlers.message)
      .handle("context", SessionHistoryHandlers.context)
      .handle("history", SessionHistoryHandlers.history)
      .handle("switchAgent", SessionSelectionHandlers.switchAgent)
      .handle("switchModel", SessionSelectionHandlers.switchModel)
      .handle("active", SessionExecutionHandlers.active)
      .handle("interrupt", SessionExecutionHandlers.interrupt)
      .handle("wait", SessionExecutionHandlers.wait)
      .handle("compact", SessionExecutionHandlers.compact)
      .handle("revertStage", SessionRevertHandlers.stage)
      .handle("revertClear", SessionRevertHandlers.clear)
      .handle("revertCommit", SessionRevertHandlers.commit)
      .handle("move", SessionMoveHandlers.move)
  })
)
