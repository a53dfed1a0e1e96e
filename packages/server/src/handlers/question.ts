export * as QuestionHandlers from "./question.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations, QuestionRequests } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/** The `questions` group: the question tool's pending requests and their answers (Core's QuestionRequests). */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "questions", (handlers) =>
  Effect.gen(function* () {
    const questions = yield* QuestionRequests.Service
    const locations = yield* Locations.Service
    return handlers
      .handle("listRequests", ({ urlParams }) =>
        Effect.gen(function* () {
          const location = yield* locations.resolve(urlParams.location)
          const data = yield* questions.listIn({ directory: location.directory, workspaceID: location.workspaceID })
          return { location, data }
        })
      )
      .handle("list", ({ path }) => Effect.map(questions.list(path.sessionID), (data) => ({ data })))
      .handle("reply", ({ path, payload }) => questions.reply(path.sessionID, path.requestID, payload.answers))
      .handle("reject", ({ path }) => questions.reject(path.sessionID, path.requestID))
  })
)
