export * as CommitFence from "./commit-fence.js"

import type { SqlClient } from "@effect/sql"
import { Context, Data, type Effect } from "effect"

/**
 * A durable commit refused because this process no longer owns the aggregate: its session's shard
 * moved to another runner (it was paused or cut off past its lock expiry). The transaction it was
 * raised in rolls back, so nothing of the refused commit is recorded. It is raised as a defect: the
 * work that tried to commit belongs to a runner that has lost the session, and must stop; the new
 * owner runs it again from the durable log.
 */
export class CommitFenced extends Data.TaggedError("EventLog/CommitFenced")<{
  readonly aggregateID: string
}> {}

export interface Interface {
  /**
   * Runs inside every durable transition's transaction (before its rows are written) for the
   * aggregate it commits to, on that transaction's connection. It succeeds when this process may
   * still commit for `aggregateID`, and dies with {@link CommitFenced} when it may not. It must not
   * commit, roll back or leave the transaction.
   */
  readonly check: (aggregateID: string) => Effect.Effect<void, never, SqlClient.SqlClient>
}

/**
 * The fence of durable commits. The EventLog looks it up once when it is built: without one (a
 * single process that owns every session) every commit is allowed. Session placement provides it so
 * that a runner that has lost a session's shard cannot commit another event for it.
 */
export class Service extends Context.Tag("@opencode-ai/core/CommitFence")<Service, Interface>() {}
