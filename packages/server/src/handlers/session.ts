export * as SessionHandlers from "./session.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations, Sessions } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/** The `sessions` group: protocol requests in, Core operations out, `{data}` envelopes back. */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "sessions", (handlers) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions.Service
    const locations = yield* Locations.Service
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const location = yield* locations.resolve(payload.location)
          const info = yield* sessions.create({
            location,
            ...(payload.id !== undefined ? { id: payload.id } : {}),
            ...(payload.agent !== undefined ? { agent: payload.agent } : {}),
            ...(payload.model !== undefined ? { model: payload.model } : {})
          })
          return { data: info }
        })
      )
      .handle("list", ({ urlParams }) => sessions.list(urlParams))
      .handle("get", ({ path }) => Effect.map(sessions.get(path.sessionID), (data) => ({ data })))
  })
)
