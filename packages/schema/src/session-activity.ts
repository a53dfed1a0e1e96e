export * as SessionActivity from "./session-activity.js"

import { Schema } from "effect"

/**
 * One entry of the foreground registry (`GET /api/session/active`): the session has a drain running
 * in this process. Idle sessions are absent from the registry rather than listed with another state.
 */
export const SessionActive = Schema.Struct({
  type: Schema.Literal("running")
}).annotations({ identifier: "SessionActive" })
export interface SessionActive extends Schema.Schema.Type<typeof SessionActive> {}
