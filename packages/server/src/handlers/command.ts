export * as CommandHandlers from "./command.js"

import { HttpApiBuilder } from "@effect/platform"
import { Commands, Traced } from "@opencode-ai/core"
import type { Command } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** A discovered command in the wire shape (its source stays on the server). */
export const info = (command: Commands.Info): Command.CommandV2Info => ({
  name: command.name,
  template: command.template,
  ...(command.description === undefined ? {} : { description: command.description }),
  ...(command.agent === undefined ? {} : { agent: command.agent }),
  ...(command.model === undefined ? {} : { model: command.model }),
  ...(command.subtask === undefined ? {} : { subtask: command.subtask })
})

/**
 * The `commands` group: the custom commands of the requested Location, read from disk at each
 * request. A command folder that cannot be searched (not merely missing) is a defect here (500): the
 * contract declares no error for it.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "commands", (handlers) =>
  Effect.gen(function* () {
    const commands = yield* Commands.Service
    return handlers.handle(
      "list",
      Traced.fn("CommandHandlers.list")(function* () {
        const location = yield* LocationMiddleware.CurrentLocation
        const data = yield* Effect.orDie(commands.list(location))
        return { location, data: data.map(info) }
      })
    )
  })
)
