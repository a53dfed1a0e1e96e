export * as QuestionHandlers from "./question.js"

import { HttpApiBuilder } from "@effect/platform"
import { QuestionRequests } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** The `questions` group: the question tool's pending requests and their answers (Core's QuestionRequests). */
export const layer = HttpApiBuilder.group(ServerApi.api, "questions", (handlers) =>
  Effect.gen(function* () {
    const questions = yield* QuestionRequests.Service
    return handlers
      .handle("listRequests", () =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const data = yield* questions.listIn({ directory: location.directory, workspaceID: location.workspaceID })
          return { location, data }
        })
      )
      .handle("list", ({ path }) => Effect.map(questions.list(path.sessionID), (data) => ({ data })))
      .handle("reply", ({ path, payload }) => questions.reply(path.sessionID, path.requestID, payload.answers))
      .handle("reject", ({ path }) => questions.reject(path.sessionID, path.requestID))
  })
)
