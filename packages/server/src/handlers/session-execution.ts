export * as SessionExecutionHandlers from "./session-execution.js"

import { SessionRunner } from "@opencode-ai/core"
import type { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"

type PathOnly = { readonly path: { readonly sessionID: Identifier.SessionID } }

/** `GET /api/session/active`: this process's foreground drains. */
export const active = () =>
  Effect.flatMap(SessionRunner.Service, (runner) => Effect.map(runner.active, (data) => ({ data })))

/** `POST /api/session/{sessionID}/interrupt`: 204 once the running Step (if any) has settled. */
export const interrupt = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.interrupt(path.sessionID))

/** `POST /api/session/{sessionID}/wait`: 204 once the session is idle. */
export const wait = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(path.sessionID))

/** `POST /api/session/{sessionID}/compact`: 204 once the compaction is requested (it runs at the next boundary). */
export const compact = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.compact(path.sessionID))
