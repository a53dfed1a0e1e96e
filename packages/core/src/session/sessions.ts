export * as Sessions from "./sessions.js"

import * as path from "node:path"
import { SqlClient, SqlError, SqlSchema, type Statement } from "@effect/sql"
import { type Cursor, Errors, Identifier, type Location, type Model, Session } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Option, ParseResult, Schema } from "effect"
import * as EventLog from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { KeysetPage } from "../storage/keyset-page.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import { PageSize } from "./page-size.js"
import * as SessionCursor from "./session-cursor.js"

/** The title a session has until its first prompt names it. */
export const defaultTitlePrefix = "New session - "

/**
 * Who chose a session's title (column `title_source`):
 * - `default`: the creation default, then the first prompt's line (see {@link titleFromPrompt}); the
 *   hidden title agent may replace it once;
 * - `given`: given when the session was created; nothing replaces it;
 * - `agent`: written by the title agent (`session.next.title.updated`); nothing replaces it.
 */
export type TitleSource = "default" | "given" | "agent"

/** The title was chosen already (given at creation, or written by the title agent): it stays. */
export class TitleAlreadySet extends Data.TaggedError("Core/TitleAlreadySet")<{
  readonly sessionID: Identifier.SessionID
}> {}

/**
 * The title a session takes from its first promoted prompt: the first non-empty line, whitespace
 * collapsed, cut at 60 characters on a word boundary when it can be.
 */
export const titleFromPrompt = (text: string): string | undefined => {
  const line = text
    .split("\n")
    .map((l) => l.replace(/\s+/g, " ").trim())
    .find((l) => l.length > 0)
  if (line === undefined) return undefined
  if (line.length <= 60) return line
  const cut = line.slice(0, 60)
  const space = cut.lastIndexOf(" ")
  return `${(space > 30 ? cut.slice(0, space) : cut).trimEnd()}…`
}

export interface CreateInput {
  /** An explicit ID makes creation idempotent for it; by default a fresh descending session ID. */
  readonly id?: Identifier.SessionID | undefined
  readonly agent?: string | undefined
  readonly model?: Model.ModelRef | undefined
  readonly location: Location.LocationInfo
  /** The session this one was started from (a subagent's child session records its parent). */
  readonly parentID?: Identifier.SessionID | undefined
  /**
   * The title; default `defaultTitlePrefix` and the creation time (a default title gives way to the
   * first prompt's, then to the title agent's). A given title is never replaced.
   */
  readonly title?: string | undefined
}

/** A first page (query fields, all optional) or a continuation (`cursor` alone). */
export interface ListInput {
  readonly cursor?: string | undefined
  readonly order?: SessionCursor.Order | undefined
  readonly limit?: number | undefined
  readonly search?: string | undefined
  readonly directory?: string | undefined
  readonly workspace?: string | undefined
  readonly project?: string | undefined
  readonly subpath?: string | undefined
}

/** One page in query order, with the cursors to the neighbouring pages when they hold items. */
export interface Page {
  readonly data: ReadonlyArray<Session.SessionV2Info>
  readonly cursor: { readonly previous?: Cursor.Token; readonly next?: Cursor.Token }
}

export interface Interface {
  /**
   * Creates a session and resolves once its `session.created` event and its row have committed
   * together. `session.created` is the log's origin event, numbered 0: it is published on the live
   * bus but is not one of the session's durable events, whose seq starts at 1 (EventLog.AppendOptions). With an explicit `id` that already exists it resolves with the stored
   * session unchanged and appends nothing, so retries are safe.
   */
  readonly create: (input: CreateInput) => Effect.Effect<Session.SessionV2Info>
  readonly get: (sessionID: Identifier.SessionID) => Effect.Effect<Session.SessionV2Info, Errors.SessionNotFoundError>
  /**
   * Succeeds when the session exists, fails with SessionNotFoundError otherwise: {@link get}'s answer
   * without reading and decoding the record. The row is read on every call (nothing is remembered,
   * unlike KnownSessions), so a session another process deleted is not found.
   */
  readonly ensureExists: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * One page of sessions, newest first unless `order: "asc"`; `limit` defaults to 50 (1..200).
   * Pages are keyset-anchored, so sessions created while walking never shift or repeat items.
   * `next` is present iff items exist after the page's last item, `previous` iff items exist
   * before its first one. A continuation is its cursor, optionally with a new `limit` and the
   * query's filters repeated unchanged (as upstream clients send them on every page); `order` or a
   * changed filter with a cursor, or an undecodable cursor, is an InvalidCursorError.
   */
  readonly list: (input?: ListInput) => Effect.Effect<Page, Errors.InvalidCursorError | Errors.InvalidRequestError>
  /**
   * The same page as {@link list}, as the JSON text of its wire form (`{"data":[...],"cursor":{...}}`,
   * the contract's SessionsResponse): the stored records are written as they are, with no decode and
   * re-encode per session. Same failures.
   */
  readonly listJson: (
    input?: ListInput
  ) => Effect.Effect<string, Errors.InvalidCursorError | Errors.InvalidRequestError>
}

/** The session store; `yield* Sessions.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Sessions")<Service, Interface>() {}

/** The session.created projection found the row already there: the append rolls back. */
class AlreadyExists extends Data.TaggedError("AlreadyExists") {}

/** The filters of a list query: a continuation may repeat them unchanged, as upstream clients do. */
const filterFields = ["search", "directory", "workspace", "project", "subpath"] as const

const InfoJson = Schema.parseJson(Session.SessionV2Info)
const decodeInfoJson = Schema.decodeUnknown(InfoJson)
const encodeInfo = Schema.encode(Session.SessionV2Info)
const encodeInfoJsonOf = Schema.encode(InfoJson)

/**
 * Recent session records by id, each with the exact `info` JSON it was decoded from or encoded to. A
 * turn reads its session's record several times (admission, the drain, each projection), and between
 * two changes the JSON is the same. Decoding is a pure function of the JSON, and the record is a
 * plain struct whose encoding decodes to an equal record, so an entry cannot go stale: a row whose
 * JSON changed (in any process or transaction, committed or not) simply misses. Bounded by count,
 * the least recently used evicted first.
 */
const recentInfos = new Map<string, { readonly json: string; readonly info: Session.SessionV2Info }>()
const recentInfosCapacity = 1024

const remember = (json: string, info: Session.SessionV2Info): Session.SessionV2Info => {
  recentInfos.delete(info.id)
  recentInfos.set(info.id, { json, info })
  if (recentInfos.size > recentInfosCapacity) recentInfos.delete(recentInfos.keys().next().value as string)
  return info
}

/**
 * The record stored as `json` (a row's `info`). With the row's `id`, decoded once per distinct JSON
 * (see {@link recentInfos}).
 */
const decodeInfo = (
  json: string,
  id?: Identifier.SessionID
): Effect.Effect<Session.SessionV2Info, ParseResult.ParseError> => {
  if (id === undefined) return decodeInfoJson(json)
  const known = recentInfos.get(id)
  if (known !== undefined && known.json === json) return Effect.succeed(remember(json, known.info))
  return Effect.map(decodeInfoJson(json), (info) => remember(json, info))
}

/** `info`'s JSON, remembered as what it decodes to. */
const encodeInfoJson = (info: Session.SessionV2Info): Effect.Effect<string, ParseResult.ParseError> =>
  Effect.map(encodeInfoJsonOf(info), (json) => {
    remember(json, info)
    return json
  })

/** `directory` relative to the project root when strictly inside it; undefined otherwise. */
const subpathOf = (location: Location.LocationInfo): string | undefined => {
  const relative = path.relative(location.project.directory, location.directory)
  const inside =
    relative !== "" && relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)
  return inside ? relative : undefined
}

// ── Table `session` (owned here) ────────────────────────────────────────────────────────────────
//
// Every query over `session` is in this section. The operations below run on the SqlClient in
// context, so inside a caller's transaction (a projection hook) they read and write on its
// connection. Rows decode through SqlSchema; an SQL or row-decoding error is a defect, turned into
// one by {@link defect}, the one place this module does it.

/** SQL errors and rows that do not decode are broken storage: defects. */
const defect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, StorageError>, R> =>
  Effect.catchAll(effect, (error) =>
    error instanceof SqlError.SqlError || ParseResult.isParseError(error)
      ? Effect.die(error)
      : Effect.fail(error as Exclude<E, StorageError>)
  )
type StorageError = SqlError.SqlError | ParseResult.ParseError

const IdRow = Schema.Struct({ id: Identifier.SessionID })
const InfoRow = Schema.Struct({ info: Schema.String })
const Found = Schema.Struct({ found: Schema.Number })

/** Runs `query` against the SqlClient in context. */
const withSql = <A, E, R>(query: (sql: SqlClient.SqlClient) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, query)

/** Whether the session's row exists. */
export const exists = (sessionID: Identifier.SessionID): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findOne({
      Request: Identifier.SessionID,
      Result: Found,
      execute: (id) => sql`SELECT 1 AS found FROM session WHERE id = ${id}`
    })(sessionID)
  ).pipe(Effect.map(Option.isSome), defect)

/** The session's stored record, if its row exists. */
export const find = (
  sessionID: Identifier.SessionID
): Effect.Effect<Option.Option<Session.SessionV2Info>, never, SqlClient.SqlClient> =>
  withSql((sql) => findWith(selectInfoOn(sql), sessionID))

const selectInfo = "SELECT info FROM session WHERE id = ?"
const selectInfoOn = PreparedSql.perClient(selectInfo)

/** {@link find} through `statement` ({@link selectInfo}). */
const findWith = (statement: PreparedSql.Statement, sessionID: Identifier.SessionID) =>
  statement.all([sessionID]).pipe(
    Effect.flatMap(([row]) => {
      if (row === undefined) return Effect.succeedNone
      if (typeof row.info !== "string") return Effect.dieMessage(`session ${sessionID}: its info is not text`)
      return Effect.asSome(decodeInfo(row.info, sessionID))
    }),
    defect
  )

/** The project the session belongs to, if its row exists. */
export const projectOf = (
  sessionID: Identifier.SessionID
): Effect.Effect<Option.Option<string>, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findOne({
      Request: Identifier.SessionID,
      Result: Schema.Struct({ project_id: Schema.String }),
      execute: (id) => sql`SELECT project_id FROM session WHERE id = ${id}`
    })(sessionID)
  ).pipe(Effect.map(Option.map((row) => row.project_id)), defect)

/**
 * The session and its descendants (the child sessions it started, and theirs), parents before
 * children, each generation in id order; empty when the session has no row.
 */
export const tree = (
  sessionID: Identifier.SessionID
): Effect.Effect<ReadonlyArray<Session.SessionV2Info>, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Identifier.SessionID,
      Result: InfoRow,
      execute: (id) => sql`
        WITH RECURSIVE tree(id, depth) AS (
          SELECT id, 0 FROM session WHERE id = ${id}
          UNION
          SELECT s.id, tree.depth + 1 FROM session s JOIN tree ON s.parent_id = tree.id
        )
        SELECT s.info FROM tree JOIN session s ON s.id = tree.id ORDER BY tree.depth, s.id`
    })(sessionID)
  ).pipe(Effect.flatMap(Effect.forEach((row) => decodeInfo(row.info))), defect)

/** Whether a session outside `sessionIDs` has its parent among them (a child started meanwhile). */
export const hasChildOutside = (
  sessionIDs: ReadonlyArray<Identifier.SessionID>
): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Schema.Array(Identifier.SessionID),
      Result: Found,
      execute: (ids) => sql`
        SELECT 1 AS found FROM session WHERE parent_id IN ${sql.in(ids)} AND id NOT IN ${sql.in(ids)} LIMIT 1`
    })(sessionIDs)
  ).pipe(
    Effect.map((rows) => rows.length > 0),
    defect
  )

/**
 * Deletes the sessions' rows (every table that references a session deletes its rows with them, by
 * their foreign keys) and resolves with the IDs that were still there.
 */
export const removeAll = (
  sessionIDs: ReadonlyArray<Identifier.SessionID>
): Effect.Effect<ReadonlyArray<Identifier.SessionID>, never, SqlClient.SqlClient> =>
  withSql((sql) =>
    SqlSchema.findAll({
      Request: Schema.Array(Identifier.SessionID),
      Result: IdRow,
      execute: (ids) => sql`DELETE FROM session WHERE id IN ${sql.in(ids)} RETURNING id`
    })(sessionIDs)
  ).pipe(
    Effect.map((rows) => rows.map((row) => row.id)),
    defect
  )

/**
 * Writes the session's record after a projection changed it (MessageProjection: cost, tokens, title,
 * agent, model, revert, `time.updated`), with the columns derived from it.
 */
export const store = (info: Session.SessionV2Info): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const json = yield* encodeInfoJson(info)
    yield* updateInfoOn(sql).run([json, info.title, info.time.updated, info.id])
  }).pipe(defect)
const updateInfoOn = PreparedSql.perClient("UPDATE session SET info = ?, title = ?, time_updated = ? WHERE id = ?")

export const insert = (
  info: Session.SessionV2Info,
  source: TitleSource
): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const json = yield* encodeInfoJson(info)
    const inserted = yield* SqlSchema.findAll({
      Request: Schema.Void,
      Result: IdRow,
      execute: () => sql`
        INSERT INTO session ${sql.insert({
          id: info.id,
          project_id: info.projectID,
          directory: info.location.directory,
          workspace_id: info.location.workspaceID ?? null,
          subpath: info.subpath ?? null,
          title: info.title,
          title_source: source,
          time_created: info.time.created,
          time_updated: info.time.updated,
          parent_id: info.parentID ?? null,
          info: json
        })}
        ON CONFLICT (id) DO NOTHING
        RETURNING id`
    })(undefined)
    return inserted.length > 0
  }).pipe(defect)

/**
 * Moves the session row to `location` inside the caller's SQL transaction (the projection of
 * `session.next.moved`): its Location, project and subpath change, in the record and in the columns
 * the list filters on. The session row must exist (SessionEvents checked it).
 */
export const relocate = Traced.fn("Sessions.relocate")(
  function* (sessionID: Identifier.SessionID, location: Location.LocationInfo) {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly info: string }>`SELECT info FROM session WHERE id = ${sessionID}`.pipe(
      Effect.orDie
    )
    if (row === undefined) return yield* Effect.dieMessage(`session ${sessionID} has no row`)
    const { subpath: _, ...before } = yield* decodeInfo(row.info).pipe(Effect.orDie)
    const subpath = subpathOf(location)
    const info: Session.SessionV2Info = {
      ...before,
      projectID: location.project.id,
      location: {
        directory: location.directory,
        ...(location.workspaceID === undefined ? {} : { workspaceID: location.workspaceID })
      },
      ...(subpath === undefined ? {} : { subpath })
    }
    const json = JSON.stringify(yield* encodeInfo(info).pipe(Effect.orDie))
    yield* sql`
      UPDATE session SET info = ${json}, project_id = ${info.projectID}, directory = ${location.directory},
        workspace_id = ${location.workspaceID ?? null}, subpath = ${subpath ?? null}
      WHERE id = ${sessionID}`.pipe(Effect.orDie)
  },
  (effect, sessionID) => LogAnnotation.session(effect, sessionID)
)

/**
 * Marks the session's title as the title agent's inside the caller's SQL transaction (the
 * projection that accompanies `session.next.title.updated`): a compare-and-set that succeeds only
 * while the title is still the `default` one, so the title is written at most once, by one writer,
 * however many hosts try. Fails with {@link TitleAlreadySet} (rolling the append back) otherwise.
 */
export const claimTitle = Traced.fn("Sessions.claimTitle")(
  function* (sessionID: Identifier.SessionID) {
    const sql = yield* SqlClient.SqlClient
    const claimed = yield* sql<{ readonly id: string }>`
      UPDATE session SET title_source = ${"agent" satisfies TitleSource}
      WHERE id = ${sessionID} AND title_source = ${"default" satisfies TitleSource}
      RETURNING id`.pipe(Effect.orDie)
    if (claimed.length === 0) return yield* new TitleAlreadySet({ sessionID })
  },
  (effect, sessionID) => LogAnnotation.session(effect, sessionID)
)

/** Who chose the session's title (see {@link TitleSource}); undefined for an unknown session. */
export const titleSource = Traced.fn("Sessions.titleSource")(function* (sessionID: Identifier.SessionID) {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ readonly title_source: TitleSource }>`
    SELECT title_source FROM session WHERE id = ${sessionID}`.pipe(Effect.orDie)
  return row?.title_source
})

/**
 * Records that the session was interrupted at `at` (the Clock its messages' times come from): start-up
 * Recovery does not continue what its history ended with before then. Idempotent; an unknown session
 * changes nothing.
 */
export const markInterrupted = Traced.fn("Sessions.markInterrupted")(
  function* (sessionID: Identifier.SessionID, at: number) {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE session SET time_interrupted = ${at} WHERE id = ${sessionID}`.pipe(Effect.orDie)
  },
  (effect, sessionID) => LogAnnotation.session(effect, sessionID)
)

/** When the session was last interrupted ({@link markInterrupted}); undefined if never, or unknown. */
export const interruptedAt = Traced.fn("Sessions.interruptedAt")(function* (sessionID: Identifier.SessionID) {
  const sql = yield* SqlClient.SqlClient
  const row = yield* SqlSchema.findOne({
    Request: Identifier.SessionID,
    Result: Schema.Struct({ time_interrupted: Schema.NullOr(Schema.Number) }),
    execute: (id) => sql`SELECT time_interrupted FROM session WHERE id = ${id}`
  })(sessionID).pipe(Effect.orDie)
  return Option.isSome(row) && row.value.time_interrupted !== null ? row.value.time_interrupted : undefined
})

/**
 * Whether the session `sessionID` names (another owner's column, e.g. `permission_request.session_id`)
 * is in a Location (its directory, and workspace when given), as an SQL condition for that owner's
 * rows: a lookup of one session by its key per row, so a Location-wide listing of pending permission
 * and question requests costs what the pending requests are, not how many sessions the Location holds.
 */
export const inLocation = (
  sql: SqlClient.SqlClient,
  sessionID: Statement.Fragment,
  location: { readonly directory: string; readonly workspaceID?: string | undefined }
) =>
  sql`EXISTS (SELECT 1 FROM session AS located WHERE located.id = ${sessionID} AND located.directory = ${location.directory}${
    location.workspaceID === undefined ? sql.literal("") : sql` AND located.workspace_id = ${location.workspaceID}`
  })`

/** `directory` relative to the project root when strictly inside it, as a session's `subpath`. */
export const subpathOfLocation = (location: Location.LocationInfo): string | undefined => subpathOf(location)

/**
 * LIKE with `\` as the escape character: the search text matches literally. Both sides are lowered,
 * so the search is case-insensitive on PostgreSQL too (SQLite's LIKE already ignores ASCII case).
 */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (char) => `\\${char}`)}%`

/** A page's key columns: creation time, then id. */
const pageKey = ["time_created", "id"]
/** A page's rows: the stored record JSON (`info`), with the keyset columns decoded as the anchor. */
const readPage = KeysetPage.reader(
  pageKey,
  Schema.Struct({ id: Identifier.SessionID, time_created: Schema.NumberFromString }),
  (row): SessionCursor.Anchor => ({ time: row.time_created, id: row.id })
)
const pageEntry = KeysetPage.entry(pageKey)

/** One page as stored: the records' JSON in query order and the anchors of the neighbouring pages. */
export interface StoredPage extends KeysetPage.Stored<SessionCursor.Anchor> {
  readonly query: SessionCursor.Query
}

const cursorsOf = (page: StoredPage): Page["cursor"] => ({
  ...(page.previous === undefined
    ? {}
    : { previous: SessionCursor.encode({ query: page.query, anchor: page.previous, direction: "previous" }) }),
  ...(page.next === undefined
    ? {}
    : { next: SessionCursor.encode({ query: page.query, anchor: page.next, direction: "next" }) })
})

/**
 * One page of sessions as stored (the records' JSON in query order) with the anchors of its
 * neighbouring pages, for a resolved list query. A first page is one indexed keyset query (nothing
 * lies before it). A continuation reads its page and asks, in the same statement, whether anything
 * lies on the far side of its anchor; only an empty continuation page asks again, in the same read
 * transaction, for what lies strictly beyond its anchor.
 */
export const page = (request: PageRequest): Effect.Effect<StoredPage, never, SqlClient.SqlClient> =>
  withSql((sql) => pageOn(sql, request))

/** A resolved list query, and the side of its anchor (if it continues a cursor) to read. */
export interface PageRequest {
  readonly query: SessionCursor.Query
  readonly anchor?: SessionCursor.Anchor | undefined
  readonly direction: "next" | "previous"
}

/** {@link page} on `sql` itself, for a caller that holds the client (no SqlClient in context). */
export const pageOn = (sql: SqlClient.SqlClient, request: PageRequest): Effect.Effect<StoredPage> =>
  Effect.suspend(() => {
    const { query, direction } = request
    const filters = [
      ...(query.search === undefined
        ? []
        : [sql`lower(title) LIKE lower(${likePattern(query.search)}) ESCAPE ${"\\"}`]),
      ...(query.directory === undefined ? [] : [sql`directory = ${query.directory}`]),
      ...(query.workspace === undefined ? [] : [sql`workspace_id = ${query.workspace}`]),
      ...(query.project === undefined ? [] : [sql`project_id = ${query.project}`]),
      ...(query.subpath === undefined ? [] : [sql`subpath = ${query.subpath}`])
    ]
    // `forward` walks in query order, backward against it; "beyond" means strictly past the key, and
    // `past(…, inclusive)` takes the key's own row too. Creation order is (time_created, then id descending):
    // session ids count down, so within one millisecond the smaller id is the newer session. Each
    // bound is a range on time_created refined on the key's own millisecond, so the index is entered
    // at the key rather than walked from its end (a deep page, or the check behind its anchor, would
    // otherwise pass every row before it).
    const ascending = (forward: boolean) => (query.order === "asc") === forward
    const past = (key: SessionCursor.Anchor, forward: boolean, inclusive: boolean) => {
      const up = ascending(forward)
      const id = sql.literal(up ? (inclusive ? "<=" : "<") : inclusive ? ">=" : ">")
      return up
        ? sql`(time_created >= ${key.time} AND (time_created > ${key.time} OR id ${id} ${key.id}))`
        : sql`(time_created <= ${key.time} AND (time_created < ${key.time} OR id ${id} ${key.id}))`
    }
    const beyond = (key: SessionCursor.Anchor, forward: boolean) => past(key, forward, false)
    const forward = direction === "next"
    const timeSort = sql.literal(ascending(forward) ? "ASC" : "DESC")
    const idSort = sql.literal(ascending(forward) ? "DESC" : "ASC")
    const order = sql`ORDER BY time_created ${timeSort}, id ${idSort} LIMIT ${query.limit + 1}`
    const entry = sql.literal(pageEntry)
    return readPage(sql, {
      limit: query.limit,
      direction,
      anchor: request.anchor,
      first: sql`SELECT ${entry} FROM session WHERE ${sql.and(filters)} ${order}`,
      // The far side of the anchor, against the reading direction: the anchor's own row included.
      continuation: (anchor) => sql`
        SELECT CASE WHEN EXISTS (
          SELECT 1 FROM session WHERE ${sql.and([...filters, past(anchor, !forward, true)])}
        ) THEN 1 ELSE 0 END || ' ' || ${entry}
        FROM session WHERE ${sql.and([...filters, beyond(anchor, forward)])} ${order}`,
      beyond: (anchor) =>
        sql`SELECT 1 AS found FROM session WHERE ${sql.and([...filters, beyond(anchor, !forward)])} LIMIT 1`
    }).pipe(Effect.map((page): StoredPage => ({ ...page, query })))
  }).pipe(defect)

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | EventLog.Service> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog.Service
    const selectInfoStatement = selectInfoOn(sql)

    const get = Traced.fn("Sessions.get")(
      function* (sessionID: Identifier.SessionID) {
        const found = yield* findWith(selectInfoStatement, sessionID)
        if (Option.isNone(found)) return yield* Errors.SessionNotFoundError.of(sessionID)
        return found.value
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const ensureExists = Traced.fn("Sessions.ensureExists")(
      function* (sessionID: Identifier.SessionID) {
        const found = yield* Effect.provideService(exists(sessionID), SqlClient.SqlClient, sql)
        if (!found) return yield* Errors.SessionNotFoundError.of(sessionID)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const create = Traced.fn("Sessions.create")(function* (input: CreateInput) {
      const now = yield* Clock.currentTimeMillis
      const id = input.id ?? Identifier.newSessionID(now)
      const subpath = subpathOf(input.location)
      const info: Session.SessionV2Info = {
        id,
        ...(input.parentID === undefined ? {} : { parentID: input.parentID }),
        projectID: input.location.project.id,
        ...(input.agent === undefined ? {} : { agent: input.agent }),
        ...(input.model === undefined ? {} : { model: input.model }),
        cost: 0,
        tokens: Session.emptyTokens,
        time: { created: now, updated: now },
        title: input.title ?? `${defaultTitlePrefix}${new Date(now).toISOString()}`,
        location: {
          directory: input.location.directory,
          ...(input.location.workspaceID === undefined ? {} : { workspaceID: input.location.workspaceID })
        },
        ...(subpath === undefined ? {} : { subpath })
      }
      const encoded = yield* encodeInfo(info).pipe(Effect.orDie)
      return yield* log
        .append(
          id,
          [{ type: "session.created", version: 1, data: { sessionID: id, info: encoded } }],
          () =>
            Effect.flatMap(insert(info, input.title === undefined ? "default" : "given"), (inserted) =>
              inserted ? Effect.void : new AlreadyExists()
            ),
          { opens: true }
        )
        .pipe(
          Effect.as(info),
          Effect.catchTag("AlreadyExists", () => Effect.orDie(get(id))),
          Effect.annotateLogs({ sessionID: id })
        )
    })

    /** The query a request runs and the side of the anchor it reads, if it continues a cursor. */
    const request = (input: ListInput) =>
      Effect.gen(function* () {
        if (input.cursor !== undefined) {
          if (input.order !== undefined) {
            return yield* new Errors.InvalidCursorError({
              message: 'A cursor continues in the order it was issued for: send it without "order"'
            })
          }
          const payload = yield* SessionCursor.decode(input.cursor).pipe(
            Effect.mapError(
              () =>
                new Errors.InvalidCursorError({ message: "The cursor is malformed or was not issued by this server" })
            )
          )
          const changed = filterFields.find(
            (field) => input[field] !== undefined && input[field] !== payload.query[field]
          )
          if (changed !== undefined) {
            return yield* new Errors.InvalidCursorError({
              message: `The cursor was issued for another query: "${changed}" differs from the one it continues`
            })
          }
          if (input.limit === undefined) return payload
          const limit = yield* PageSize.check(input.limit)
          return { ...payload, query: { ...payload.query, limit } }
        }
        const limit = yield* PageSize.check(input.limit ?? PageSize.defaultLimit)
        const query: SessionCursor.Query = {
          order: input.order ?? "desc",
          limit,
          ...(input.search === undefined ? {} : { search: input.search }),
          ...(input.directory === undefined ? {} : { directory: input.directory }),
          ...(input.workspace === undefined ? {} : { workspace: input.workspace }),
          ...(input.project === undefined ? {} : { project: input.project }),
          ...(input.subpath === undefined ? {} : { subpath: input.subpath })
        }
        return { query, anchor: undefined, direction: "next" as const }
      })

    const stored = (input: ListInput) => Effect.flatMap(request(input), (resolved) => pageOn(sql, resolved))

    const list = Traced.fn("Sessions.list")(function* (input: ListInput = {}) {
      const page = yield* stored(input)
      const data = yield* Effect.forEach(page.infos, (info) => decodeInfo(info)).pipe(Effect.orDie)
      return { data, cursor: cursorsOf(page) } satisfies Page
    })

    const listJson = Traced.fn("Sessions.listJson")(function* (input: ListInput = {}) {
      const page = yield* stored(input)
      return `{"data":[${page.infos.join(",")}],"cursor":${JSON.stringify(cursorsOf(page))}}`
    })

    return Service.of({ create, get, ensureExists, list, listJson })
  })
)
