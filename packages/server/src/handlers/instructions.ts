export * as InstructionHandlers from "./instructions.js"

import { HttpApiBuilder } from "@effect/platform"
import { InstructionEntries } from "@opencode-ai/core"
import type { Json } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"

const info = (entry: { readonly name: string; readonly value: Json.Value }) => ({ key: entry.name, value: entry.value })

/** The `instructions` group: a session's API-managed InstructionEntry values. */
export const layer = HttpApiBuilder.group(ServerApi.api, "instructions", (handlers) =>
  Effect.gen(function* () {
    const entries = yield* InstructionEntries.Service
    return handlers
      .handle("list", ({ path }) => Effect.map(entries.list(path.sessionID), (all) => ({ data: all.map(info) })))
      .handle("put", ({ path, payload }) =>
        Effect.map(entries.put(path.sessionID, path.key, payload.value), (entry) => ({ data: info(entry) }))
      )
      .handle("remove", ({ path }) => entries.remove(path.sessionID, path.key))
  })
)
