export * as Sessions from "./sessions.js"

import * as path from "node:path"
import { SqlClient, SqlSchema } from "@effect/sql"
import { type Cursor, Errors, Identifier, type Location, type Model, Session } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import * as EventLog from "../event/event-log.js"
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
export class TitleAlreadySet extends Data.TaggedError("Core/TitleAlreadySet")<{ readonly sessionID: string }> {}

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
  readonly get: (sessionID: string) => Effect.Effect<Session.SessionV2Info, Errors.SessionNotFoundError>
  /**
   * One page of sessions, newest first unless `order: "asc"`; `limit` defaults to 50 (1..200).
   * Pages are keyset-anchored, so sessions created while walking never shift or repeat items.
   * `next` is present iff items exist after the page's last item, `previous` iff items exist
   * before its first one. A continuation is its cursor, optionally with a new `limit` and the
   * query's filters repeated unchanged (as upstream clients send them on every page); `order` or a
   * changed filter with a cursor, or an undecodable cursor, is an InvalidCursorError.
   */
  readonly list: (input?: ListInput) => Effect.Effect<Page, Errors.InvalidCursorError | Errors.InvalidRequestError>
}

/** The session store; `yield* Sessions.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Sessions")<Service, Interface>() {}

/** The session.created projection found the row already there: the append rolls back. */
class AlreadyExists extends Data.TaggedError("AlreadyExists") {}

interface Row {
  readonly info: string
  readonly time_created: number
  readonly id: string
}

/** The filters of a list query: a continuation may repeat them unchanged, as upstream clients do. */
const filterFields = ["search", "directory", "workspace", "project", "subpath"] as const

const decodeInfo = Schema.decodeUnknown(Schema.parseJson(Session.SessionV2Info))
const encodeInfo = Schema.encode(Session.SessionV2Info)

/** `directory` relative to the project root when strictly inside it; undefined otherwise. */
const subpathOf = (location: Location.LocationInfo): string | undefined => {
  const relative = path.relative(location.project.directory, location.directory)
  const inside =
    relative !== "" && relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)
  return inside ? relative : undefined
}

/**
 * Moves the session row to `location` inside the caller's SQL transaction (the projection of
 * `session.next.moved`): its Location, project and subpath change, in the record and in the columns
 * the list filters on. The session row must exist (SessionEvents checked it).
 */
export const relocate = Effect.fn("Sessions.relocate")(
  function* (sessionID: string, location: Location.LocationInfo) {
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
  (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
)

/**
 * Marks the session's title as the title agent's inside the caller's SQL transaction (the
 * projection that accompanies `session.next.title.updated`): a compare-and-set that succeeds only
 * while the title is still the `default` one, so the title is written at most once, by one writer,
 * however many hosts try. Fails with {@link TitleAlreadySet} (rolling the append back) otherwise.
 */
export const claimTitle = Effect.fn("Sessions.claimTitle")(
  function* (sessionID: string) {
    const sql = yield* SqlClient.SqlClient
    const claimed = yield* sql<{ readonly id: string }>`
      UPDATE session SET title_source = ${"agent" satisfies TitleSource}
      WHERE id = ${sessionID} AND title_source = ${"default" satisfies TitleSource}
      RETURNING id`.pipe(Effect.orDie)
    if (claimed.length === 0) return yield* new TitleAlreadySet({ sessionID })
  },
  (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
)

/** Who chose the session's title (see {@link TitleSource}); undefined for an unknown session. */
export const titleSource = Effect.fn("Sessions.titleSource")(function* (sessionID: string) {
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
export const markInterrupted = Effect.fn("Sessions.markInterrupted")(
  function* (sessionID: Identifier.SessionID, at: number) {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE session SET time_interrupted = ${at} WHERE id = ${sessionID}`.pipe(Effect.orDie)
  },
  (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
)

/** When the session was last interrupted ({@link markInterrupted}); undefined if never, or unknown. */
export const interruptedAt = Effect.fn("Sessions.interruptedAt")(function* (sessionID: Identifier.SessionID) {
  const sql = yield* SqlClient.SqlClient
  const row = yield* SqlSchema.findOne({
    Request: Identifier.SessionID,
    Result: Schema.Struct({ time_interrupted: Schema.NullOr(Schema.Number) }),
    execute: (id) => sql`SELECT time_interrupted FROM session WHERE id = ${id}`
  })(sessionID).pipe(Effect.orDie)
  return Option.isSome(row) && row.value.time_interrupted !== null ? row.value.time_interrupted : undefined
})

/**
 * The ids of the sessions in a Location (its directory, and workspace when given) as an SQL subquery,
 * for another owner's `session_id IN (...)` filter (pending permission and question requests).
 */
export const idsInLocation = (
  sql: SqlClient.SqlClient,
  location: { readonly directory: string; readonly workspaceID?: string | undefined }
) =>
  sql`SELECT id FROM session WHERE directory = ${location.directory}${
    location.workspaceID === undefined ? sql.literal("") : sql` AND workspace_id = ${location.workspaceID}`
  }`

/** `directory` relative to the project root when strictly inside it, as a session's `subpath`. */
export const subpathOfLocation = (location: Location.LocationInfo): string | undefined => subpathOf(location)

/** LIKE with `\` as the escape character: the search text matches literally. */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (char) => `\\${char}`)}%`

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | EventLog.Service> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog.Service

    const get = Effect.fn("Sessions.get")(
      function* (sessionID: string) {
        const [row] = yield* sql<{ readonly info: string }>`SELECT info FROM session WHERE id = ${sessionID}`.pipe(
          Effect.orDie
        )
        if (row === undefined) return yield* Errors.SessionNotFoundError.of(sessionID)
        return yield* decodeInfo(row.info).pipe(Effect.orDie)
      },
      (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
    )

    const insertRow = (info: Session.SessionV2Info, json: string, source: TitleSource) =>
      sql<{ readonly id: string }>`
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
          info: json
        })}
        ON CONFLICT (id) DO NOTHING
        RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap((inserted) => (inserted.length === 0 ? new AlreadyExists() : Effect.void))
      )

    const create = Effect.fn("Sessions.create")(function* (input: CreateInput) {
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
          () => insertRow(info, JSON.stringify(encoded), input.title === undefined ? "default" : "given"),
          { opens: true }
        )
        .pipe(
          Effect.as(info),
          Effect.catchTag("AlreadyExists", () => Effect.orDie(get(id))),
          Effect.annotateLogs({ sessionID: id })
        )
    })

    /** The query a request runs and the side of the anchor it reads, if it continues a cursor. */
    const request = Effect.fn("Sessions.request")(function* (input: ListInput) {
      if (input.cursor !== undefined) {
        if (input.order !== undefined) {
          return yield* new Errors.InvalidCursorError({
            message: 'A cursor continues in the order it was issued for: send it without "order"'
          })
        }
        const payload = yield* SessionCursor.decode(input.cursor).pipe(
          Effect.mapError(
            () => new Errors.InvalidCursorError({ message: "The cursor is malformed or was not issued by this server" })
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

    const list = Effect.fn("Sessions.list")(function* (input: ListInput = {}) {
      const { query, anchor, direction } = yield* request(input)

      const filters = [
        ...(query.search === undefined ? [] : [sql`title LIKE ${likePattern(query.search)} ESCAPE ${"\\"}`]),
        ...(query.directory === undefined ? [] : [sql`directory = ${query.directory}`]),
        ...(query.workspace === undefined ? [] : [sql`workspace_id = ${query.workspace}`]),
        ...(query.project === undefined ? [] : [sql`project_id = ${query.project}`]),
        ...(query.subpath === undefined ? [] : [sql`subpath = ${query.subpath}`])
      ]
      // `forward` walks in query order, backward against it; "beyond" means strictly past the key.
      // Creation order is (time_created, then id descending): session ids count down, so within one
      // millisecond the smaller id is the newer session.
      const ascending = (forward: boolean) => (query.order === "asc") === forward
      const beyond = (key: SessionCursor.Anchor, forward: boolean) =>
        ascending(forward)
          ? sql`(time_created > ${key.time} OR (time_created = ${key.time} AND id < ${key.id}))`
          : sql`(time_created < ${key.time} OR (time_created = ${key.time} AND id > ${key.id}))`
      const exists = (key: SessionCursor.Anchor, forward: boolean) =>
        sql`SELECT 1 FROM session WHERE ${sql.and([...filters, beyond(key, forward)])} LIMIT 1`.pipe(
          Effect.map((rows) => rows.length > 0)
        )

      const forward = direction === "next"
      const timeSort = sql.literal(ascending(forward) ? "ASC" : "DESC")
      const idSort = sql.literal(ascending(forward) ? "DESC" : "ASC")
      const keyOf = (row: Row): SessionCursor.Anchor => ({ time: row.time_created, id: row.id })
      // One read transaction, so the page and the neighbour checks see the same snapshot.
      const { items, previous, next } = yield* Effect.gen(function* () {
        const rows = yield* sql<Row>`
          SELECT info, time_created, id FROM session
          WHERE ${sql.and(anchor === undefined ? filters : [...filters, beyond(anchor, forward)])}
          ORDER BY time_created ${timeSort}, id ${idSort}
          LIMIT ${query.limit + 1}`
        const more = rows.length > query.limit
        const taken = rows.slice(0, query.limit)
        const items = forward ? taken : taken.reverse()
        // The edges of the page in query order; an empty continuation page has only its anchor.
        const head = items.length > 0 ? keyOf(items[0]!) : anchor
        const tail = items.length > 0 ? keyOf(items[items.length - 1]!) : anchor
        // The extra row answers for the side the page was read towards; the other side is asked.
        const hasPrevious = forward ? head !== undefined && (yield* exists(head, false)) : more
        const hasNext = forward ? more : tail !== undefined && (yield* exists(tail, true))
        return {
          items,
          previous: hasPrevious ? head : undefined,
          next: hasNext ? tail : undefined
        }
      }).pipe(sql.withTransaction, Effect.orDie)

      const data = yield* Effect.forEach(items, (row) => decodeInfo(row.info)).pipe(Effect.orDie)
      return {
        data,
        cursor: {
          ...(previous === undefined
            ? {}
            : { previous: SessionCursor.encode({ query, anchor: previous, direction: "previous" }) }),
          ...(next === undefined ? {} : { next: SessionCursor.encode({ query, anchor: next, direction: "next" }) })
        }
      } satisfies Page
    })

    return Service.of({ create, get, list })
  })
)
