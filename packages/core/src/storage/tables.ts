export * as Tables from "./tables.js"

import { sql } from "drizzle-orm"
import { foreignKey, index, integer, primaryKey, sqliteTable, text, unique, uniqueIndex } from "drizzle-orm/sqlite-core"

/**
 * The drizzle definitions of the durable tables. They exist to generate the migration SQL
 * (`drizzle-kit generate`); queries run through the Effect SqlClient against the same names.
 */

/**
 * The last sequence number handed out per aggregate; the next append continues from it. The row of
 * the empty key is no aggregate's: on SQLite it is the commit-order counter, the last
 * `event.position` handed out (see `EventLog`).
 */
export const eventSequence = sqliteTable("event_sequence", {
  aggregateID: text("aggregate_id").primaryKey(),
  seq: integer("seq").notNull()
})

/** The durable event log: one row per committed event, gapless `seq` per aggregate from 1. */
export const event = sqliteTable(
  "event",
  {
    id: text("id").primaryKey(),
    aggregateID: text("aggregate_id").notNull(),
    seq: integer("seq").notNull(),
    type: text("type").notNull(),
    version: integer("version").notNull(),
    /** The event's `data`, as its contract-encoded JSON text, written once at append and replayed as is. */
    data: text("data").notNull(),
    timeCreated: integer("time_created").notNull(),
    /**
     * The event's place in the database's commit order: on SQLite a counter bumped in the append's
     * transaction (one writer: it grows in commit order, never goes back), which other processes'
     * relay reads by; on PostgreSQL a sequence (unique, not commit-ordered: cross-process readers go
     * by `(aggregate_id, seq)` there).
     */
    position: integer("position").notNull().default(0)
  },
  (table) => [
    unique("event_aggregate_seq_unique").on(table.aggregateID, table.seq),
    index("event_position_index").on(table.position),
    foreignKey({ columns: [table.aggregateID], foreignColumns: [eventSequence.aggregateID] }).onDelete("cascade")
  ]
)

/**
 * The session projection: the filterable columns plus the whole SessionV2Info as JSON in `info`.
 * A list page walks creation order, `(time_created, id DESC)` (ids count down within a millisecond),
 * read forwards or backwards; its indexes hold that order whole, alone and after the `directory` and
 * `project_id` filters, so a page reads its rows in order and stops at its limit instead of sorting
 * every row the filter matches.
 */
export const session = sqliteTable(
  "session",
  {
    id: text("id").primaryKey(),
    projectID: text("project_id").notNull(),
    directory: text("directory").notNull(),
    workspaceID: text("workspace_id"),
    subpath: text("subpath"),
    title: text("title").notNull(),
    timeCreated: integer("time_created").notNull(),
    timeUpdated: integer("time_updated").notNull(),
    info: text("info").notNull(),
    /** When the session was last interrupted (wall-clock ms): Recovery does not continue what came before. */
    timeInterrupted: integer("time_interrupted"),
    /**
     * Who chose `title` (see `Sessions.TitleSource`): `default` (the creation default, or the first
     * prompt's line: the title agent may still replace it), `given` (at creation), `agent` (the hidden
     * title agent wrote it; it is never written again).
     */
    titleSource: text("title_source").notNull().default("default"),
    /** The session this one was started from (`info.parentID`): Session Delete walks the tree on it. */
    parentID: text("parent_id")
  },
  (table) => [
    index("session_list_idx").on(table.timeCreated, sql`${table.id} DESC`),
    index("session_directory_list_idx").on(table.directory, table.timeCreated, sql`${table.id} DESC`),
    index("session_project_list_idx").on(table.projectID, table.timeCreated, sql`${table.id} DESC`),
    index("session_parent_id_idx").on(table.parentID)
  ]
)

/**
 * A session's InstructionCheckpoint (at most one row per session; none until the first complete
 * baseline, and none again after a reset). `baseline_text` is the exact joined Instruction Baseline,
 * `baseline_seq` the session's last event seq when it was rendered, `applied` the Applied
 * Instructions as JSON. `compaction_seq` is the seq of the latest completed compaction recorded for
 * the session: when it is past `baseline_seq` the next prepare rebaselines. `revision` counts writes,
 * so a writer can compare-and-set against the row it read.
 */
export const instructionCheckpoint = sqliteTable("instruction_checkpoint", {
  sessionID: text("session_id")
    .primaryKey()
    .references(() => session.id, { onDelete: "cascade" }),
  baselineText: text("baseline_text").notNull(),
  baselineSeq: integer("baseline_seq").notNull(),
  /** Instructions.Applied, as JSON. */
  applied: text("applied").notNull(),
  compactionSeq: integer("compaction_seq"),
  revision: integer("revision").notNull(),
  timeCreated: integer("time_created").notNull(),
  timeUpdated: integer("time_updated").notNull()
})

/** API-managed InstructionEntry values: one JSON value per session and slash-free key. */
export const instructionEntry = sqliteTable(
  "instruction_entry",
  {
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    /** The entry's JSON value, as JSON text. */
    value: text("value").notNull(),
    timeUpdated: integer("time_updated").notNull()
  },
  (table) => [primaryKey({ columns: [table.sessionID, table.key] })]
)

/**
 * Nested AGENTS.md files noted for a session (NestedInstructions): one row per file found between a
 * successfully read target and the session's Location `directory`, in `position` order. A row
 * is pending until the next Safe Step Boundary's prepare admits it through the
 * `core/nested-instructions` Instruction Source; only rows of the session's current Location directory
 * are composed.
 */
export const nestedInstruction = sqliteTable(
  "nested_instruction",
  {
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    /** The Location directory the file was noted in. */
    directory: text("directory").notNull(),
    /** The absolute path of the AGENTS.md file. */
    path: text("path").notNull(),
    timeCreated: integer("time_created").notNull(),
    /** The order the files were noted in within the session and directory (outermost first per read). */
    position: integer("position").notNull().default(0)
  },
  (table) => [primaryKey({ columns: [table.sessionID, table.directory, table.path] })]
)

/**
 * The Session Message projection (MessageProjection): one row per message of a session's history,
 * written in the transaction of the durable event that created or changed it. `seq` is the seq of
 * the event that created the message, so `(session_id, seq)` is the chronological order (and the
 * keyset of message pages); `info` is the whole SessionMessage as JSON, `type` its discriminator.
 */
export const message = sqliteTable(
  "message",
  {
    id: text("id").primaryKey(),
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    type: text("type").notNull(),
    info: text("info").notNull(),
    timeCreated: integer("time_created").notNull(),
    /**
     * What the message leaves for a Step to do, so that start-up Recovery finds unfinished work through
     * an index instead of reading history: 2 for an assistant message whose Step is still open (no
     * finish, no error); 1 for the session's latest conversation message when a Step should continue
     * after it (a user or synthetic message, or an assistant message that finished with tool calls);
     * 0 otherwise. A later conversation message clears the 1 of earlier ones.
     */
    pendingWork: integer("pending_work").notNull().default(0),
    /**
     * The seq of the last event that wrote the row (0 for rows last written before this column). The
     * session's log seq only grows, so the rows with a larger one are exactly those written since a
     * reader saw that seq: a Step reads only what changed since its previous one (see
     * MessageProjection.context).
     */
    changedSeq: integer("changed_seq").notNull().default(0)
  },
  (table) => [
    uniqueIndex("message_session_seq_idx").on(table.sessionID, table.seq),
    index("message_pending_work_idx").on(table.sessionID).where(sql`pending_work <> 0`),
    // The Model Context starts at the session's latest compaction: found without reading history.
    index("message_compaction_idx").on(table.sessionID, table.seq).where(sql`type = 'compaction'`),
    index("message_changed_idx").on(table.sessionID, table.changedSeq)
  ]
)

/**
 * The session inbox (SessionInput): one row per Admitted Prompt. `input` is the PromptInput as
 * submitted (canonical JSON, for idempotent retries), `prompt` the admitted Prompt with resolved
 * attachments. `admitted_seq` is the seq of its `prompt.admitted` event; `promoted_seq` stays NULL
 * while the prompt is pending and becomes the seq of its `prompted` event when it is promoted.
 */
export const sessionInput = sqliteTable(
  "session_input",
  {
    id: text("id").primaryKey(),
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    delivery: text("delivery").notNull(),
    input: text("input").notNull(),
    prompt: text("prompt").notNull(),
    admittedSeq: integer("admitted_seq").notNull(),
    promotedSeq: integer("promoted_seq"),
    timeCreated: integer("time_created").notNull()
  },
  (table) => [
    index("session_input_session_admitted_idx").on(table.sessionID, table.admittedSeq),
    index("session_input_unpromoted_idx").on(table.sessionID).where(sql`promoted_seq IS NULL`)
  ]
)

/**
 * Permission requests (PermissionRequests): one row per request, written in the transaction of its
 * `permission.v2.asked` event and updated in that of its `permission.v2.replied` event. `info` is the
 * PermissionV2Request as JSON, `ruleset` the asking agent's rules captured when it asked (a later agent
 * switch does not change them), `origin` who waits on it (`runner`: a tool call of this process;
 * `api`: a client). `status` is `pending` until answered, then the reply (`once`, `always`, `reject`).
 */
export const permissionRequest = sqliteTable(
  "permission_request",
  {
    id: text("id").primaryKey(),
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    agent: text("agent").notNull(),
    origin: text("origin").notNull(),
    ruleset: text("ruleset").notNull(),
    info: text("info").notNull(),
    status: text("status").notNull(),
    message: text("message"),
    timeCreated: integer("time_created").notNull(),
    timeReplied: integer("time_replied")
  },
  (table) => [index("permission_request_status_session_idx").on(table.status, table.sessionID)]
)

/**
 * Question requests (the `question` tool): `info` is the QuestionV2Request JSON; `status` is
 * `pending`, `replied` or `rejected`; `answers` the reply's JSON. `origin` is `runner` (a tool call
 * of this process waits on it).
 */
export const questionRequest = sqliteTable(
  "question_request",
  {
    id: text("id").primaryKey(),
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    origin: text("origin").notNull(),
    info: text("info").notNull(),
    status: text("status").notNull(),
    answers: text("answers"),
    message: text("message"),
    timeCreated: integer("time_created").notNull(),
    timeReplied: integer("time_replied")
  },
  (table) => [index("question_request_status_session_idx").on(table.status, table.sessionID)]
)

/** Saved permissions: `action` on `resource` (a pattern) is allowed in the project (a reply of `always`). */
export const permissionSaved = sqliteTable(
  "permission_saved",
  {
    id: text("id").primaryKey(),
    projectID: text("project_id").notNull(),
    action: text("action").notNull(),
    resource: text("resource").notNull(),
    timeCreated: integer("time_created").notNull()
  },
  (table) => [
    uniqueIndex("permission_saved_project_action_resource_idx").on(table.projectID, table.action, table.resource)
  ]
)

/**
 * Runtime Hosts: the processes driving sessions over this database. A host writes `time_seen` at
 * every heartbeat; `machine` (the host name and PID namespace) says whether `pid` can be checked
 * from another host's process.
 */
export const runtimeHost = sqliteTable("runtime_host", {
  id: text("id").primaryKey(),
  pid: integer("pid").notNull(),
  machine: text("machine").notNull(),
  timeStarted: integer("time_started").notNull(),
  timeSeen: integer("time_seen").notNull()
})

/**
 * Session Leases: the host whose drain drives a session, held while it drains. Another host that
 * is asked to interrupt the session records the request here for the holder to carry out.
 */
export const sessionLease = sqliteTable(
  "session_lease",
  {
    sessionID: text("session_id")
      .primaryKey()
      .references(() => session.id, { onDelete: "cascade" }),
    hostID: text("host_id").notNull(),
    timeClaimed: integer("time_claimed").notNull(),
    /** When another host asked the holder to interrupt the session (ms), until the holder does. */
    timeInterruptRequested: integer("time_interrupt_requested")
  },
  (table) => [index("session_lease_host_idx").on(table.hostID)]
)

/**
 * Committed reverts (owner: `session/session-revert.ts`): the messages of the session with a seq in
 * `from_seq..to_seq` are out of its active history (SessionHistory.context skips them); the durable
 * log and the transcript keep them. `message_id` is the message the revert went back to.
 */
export const sessionRevert = sqliteTable(
  "session_revert",
  {
    sessionID: text("session_id")
      .notNull()
      .references(() => session.id, { onDelete: "cascade" }),
    fromSeq: integer("from_seq").notNull(),
    toSeq: integer("to_seq").notNull(),
    messageID: text("message_id").notNull(),
    timeCreated: integer("time_created").notNull()
  },
  (table) => [primaryKey({ columns: [table.sessionID, table.toSeq] })]
)
