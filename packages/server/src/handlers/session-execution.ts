export * as SessionExecutionHandlers from "./session-execution.js"

import { RunningSessions, SessionRunner } from "@opencode-ai/core"
import type { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"

type PathOnly = { readonly path: { readonly sessionID: Identifier.SessionID } }

/**
 * `GET /api/session/active`: this process's foreground drains, and over PostgreSQL the sessions the
 * other live hosts run (RunningSessions.elsewhere).
 */
export const active = () =>
  Effect.gen(function* () {
    const here = yield* Effect.flatMap(SessionRunner.Service, (runner) => runner.active)
    const elsewhere = yield* RunningSessions.elsewhere()
    if (elsewhere.length === 0) return { data: here }
    const data: Record<string, { readonly type: "running" }> = { ...here }
    for (const sessionID of elsewhere) data[sessionID] = { type: "running" }
    return { data }
  })

/** `POST /api/session/{sessionID}/interrupt`: 204 once the running Step (if any) has settled. */
export const interrupt = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.interrupt(path.sessionID))

/** `POST /api/session/{sessionID}/wait`: 204 once the session is idle. */
export const wait = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(path.sessionID))

/** `POST /api/session/{sessionID}/compact`: 204 once the compaction is requested (it runs at the next boundary). */
export const compact = ({ path }: PathOnly) =>
  Effect.flatMap(SessionRunner.Service, (runner) => runner.compact(path.sessionID))
