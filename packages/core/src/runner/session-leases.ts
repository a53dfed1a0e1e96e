export * as SessionLeases from "./session-leases.js"

/**
 * Session Leases: which Runtime Host drives a session.
 *
 * Several processes may open one database file (the data directory is per user, so two
 * `opencode serve` in two projects, or a server and an embedded host, share it). Each registers as a
 * Runtime Host (`runtime_host`) and writes a heartbeat. A drain runs only while its host holds the
 * session's lease (`session_lease`): claimed when the drain starts, released when it ends. So two
 * hosts never run Steps of one session at once, and a host's startup Recovery never settles a Step
 * that another live host is still running.
 *
 * A host is live while its heartbeat is recent (`expiryMs`) and, when it runs on this machine (same
 * host name and PID namespace), while its process exists: a host killed with SIGKILL is dead at once
 * for the processes beside it. The lease of a dead host is taken over by the next claim. A host asked
 * to interrupt a session another live host runs records the request on the lease; the holder takes
 * it from there (see SessionRunner). Times here are wall-clock milliseconds (`Date.now()`), never the
 * Effect Clock: they are compared across processes.
 *
 * Fencing: the layer also provides the {@link CommitFence} the EventLog checks in every commit's
 * transaction. A commit made by a drain ({@link drive}) to its own session passes only while the
 * session's lease row names this host, read in that same transaction. The lease is the session's
 * durable ownership epoch: a host id is fresh per layer, a host runs at most one drain per session,
 * and a drain claims before its first commit. So a host frozen (or cut off) until another host judged
 * it dead and took the lease over cannot record anything more for that session when it wakes: the
 * commit dies with `EventLog/CommitFenced` and writes nothing. Commits made outside a drain
 * (admission from any host, titles, deletes) are ordered by the log's sequence alone.
 */

import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Context, Effect, FiberRef, Layer, Option, Schema } from "effect"
import { WakeSignal } from "../clock/wake-signal.js"
import { WallClock } from "../clock/wall-clock.js"
import { CommitFence } from "../event/commit-fence.js"
import { Traced } from "../observability/traced.js"
import { PreparedSql } from "../storage/prepared-sql.js"

export interface Options {
  /** How often this host writes its heartbeat (and its runner looks for dead hosts' leases); default 2 s. */
  readonly heartbeatMs?: number
  /** A host whose heartbeat is older than this is dead, even if a process with its pid exists; default 30 s. */
  readonly expiryMs?: number
}

export const defaultHeartbeatMs = 2_000
export const defaultExpiryMs = 30_000

/**
 * The lease timings from the environment: `OPENCODE_HOST_HEARTBEAT_MS` (how often a host writes its
 * heartbeat and looks for stopped hosts) and `OPENCODE_HOST_EXPIRY_MS` (how long a silent host on
 * another machine, or a frozen one on this machine, is still taken for live: the takeover delay for
 * those). A host killed on this machine is taken over at the next heartbeat whatever the expiry.
 * Values that are not positive integers are ignored (the defaults apply).
 */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): Options => {
  const read = (name: string) => {
    const value = env[name]
    return value !== undefined && /^\d+$/.test(value) && Number(value) > 0 ? Number(value) : undefined
  }
  const heartbeatMs = read("OPENCODE_HOST_HEARTBEAT_MS")
  const expiryMs = read("OPENCODE_HOST_EXPIRY_MS")
  return {
    ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
    ...(expiryMs === undefined ? {} : { expiryMs })
  }
}

/**
 * The session the current fiber drains as its lease holder (set by {@link drive}): its commits to
 * that session are fenced. Unset everywhere else.
 */
export const driving = FiberRef.unsafeMake<Identifier.SessionID | undefined>(undefined)

/** Runs `effect` as the drain of `sessionID` under this host's lease: its commits to that session are fenced. */
export const drive = <A, E, R>(
  sessionID: Identifier.SessionID,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => Effect.locally(effect, driving, sessionID)

/** Runs `effect` outside any drain's fence (work a drain starts that may outlive its lease, e.g. a title). */
export const undriven = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, driving, undefined)

/** What a claim found: the lease is this host's now (`from`: the dead host it was taken from), or another live host holds it. */
export type Claim =
  | { readonly _tag: "Claimed"; readonly from?: string }
  | { readonly _tag: "Held"; readonly host: string }

/** Who holds a session's lease (see {@link Interface.holding}). */
export type Holding = "free" | "here" | "elsewhere" | "stopped"

export interface Interface {
  /** This host's id (a fresh one per layer). */
  readonly host: string
  /** The heartbeat period in ms: how often a runner should look for {@link Interface.orphaned} leases. */
  readonly heartbeatMs: number
  /**
   * Claims the session for this host: succeeds when nobody holds it, when this host already does, or
   * when its holder is dead (`from` names it: what that host left running must be settled before
   * new work). Returns `Held` when another live host holds it. Atomic against concurrent claims from
   * any process; idempotent for the holder.
   */
  readonly claim: (sessionID: Identifier.SessionID) => Effect.Effect<Claim>
  /** Whether another live host holds the session now (it is running there). */
  readonly heldElsewhere: (sessionID: Identifier.SessionID) => Effect.Effect<boolean>
  /** Those of `sessionIDs` another live host holds now, in one read. */
  readonly heldElsewhereAmong: (
    sessionIDs: ReadonlyArray<Identifier.SessionID>
  ) => Effect.Effect<ReadonlySet<Identifier.SessionID>>
  /**
   * Who holds the session now, in one read: nobody (`free`), this host (`here`), another live host
   * (`elsewhere`: it runs there), or a host that stopped (`stopped`: a claim here takes it over and
   * settles what it left).
   */
  readonly holding: (sessionID: Identifier.SessionID) => Effect.Effect<Holding>
  /**
   * Asks the live host holding the session to interrupt it: the request is recorded on its lease,
   * and that host carries it out when it next looks ({@link Interface.interruptRequests}).
   */
  readonly requestInterrupt: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** Takes the interrupt requests other hosts recorded on this host's leases: the sessions to interrupt. */
  readonly interruptRequests: Effect.Effect<ReadonlyArray<Identifier.SessionID>>
  /**
   * Notified when another host has just recorded an interrupt request for this one (over PostgreSQL,
   * told at once); never over SQLite, where a host finds requests only by looking (SessionRunner
   * sleeps on it between looks, at most 250 ms).
   */
  readonly interruptRequested: WakeSignal.Signal
  /** Gives the session up if this host holds it; idempotent. Runs to completion once started. */
  readonly release: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /**
   * The sessions whose lease a dead host still holds (to be claimed and settled), oldest lease first.
   * Dead hosts that hold nothing are forgotten.
   */
  readonly orphaned: Effect.Effect<ReadonlyArray<Identifier.SessionID>>
  /**
   * Whether sessions came to be placed on this host since the last look, so that what they left
   * unfinished (admitted input, open Steps) is this host's to recover now. Always false here: every
   * host may claim every session, and startup Recovery covers them. With cluster placement
   * (ShardLeases), true when the runner acquired a shard it did not hold at the last look, or holds
   * a shard that a placement check ({@link placedHere}) found not held since then.
   */
  readonly gained: Effect.Effect<boolean>
  /**
   * Whether the session is still placed on this host, looked at by its drain at every Safe Step
   * Boundary: a drain stops there when it is not. Always true here. With cluster placement, false
   * from the moment the runner starts handing the session's shard over to another runner.
   */
  readonly placedHere: (sessionID: Identifier.SessionID) => boolean
}

/** `yield* SessionLeases.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionLeases")<Service, Interface>() {}

/** This machine as seen by `pid`: the host name, plus the PID namespace where the OS exposes it. */
const machine = (() => {
  let namespace = ""
  try {
    namespace = fs.readlinkSync("/proc/self/ns/pid")
  } catch {
    // No procfs: the host name alone.
  }
  return `${os.hostname()}|${namespace}`
})()

/** Whether a process with this pid exists (EPERM: it exists but belongs to someone else). */
const processExists = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const claimed: Claim = { _tag: "Claimed" }

/** A `runtime_host` row, as the liveness check reads it. */
const HostRow = Schema.Struct({
  id: Schema.String,
  pid: Schema.Number,
  machine: Schema.String,
  time_seen: Schema.Number
})
type HostRow = typeof HostRow.Type

/** A lease with its holder's host row, when the holder still has one (a LEFT JOIN: null columns otherwise). */
const HolderRow = Schema.Struct({
  holder: Schema.String,
  id: Schema.NullOr(Schema.String),
  pid: Schema.NullOr(Schema.Number),
  machine: Schema.NullOr(Schema.String),
  time_seen: Schema.NullOr(Schema.Number)
})

const decodeHolderRow = Schema.decodeUnknown(HolderRow)

/** The holder's host row of a {@link HolderRow}, when it still has one. */
const hostOf = (row: typeof HolderRow.Type): HostRow | undefined =>
  row.id === null || row.pid === null || row.machine === null || row.time_seen === null
    ? undefined
    : { id: row.id, pid: row.pid, machine: row.machine, time_seen: row.time_seen }

const SessionRow = Schema.Struct({ session_id: Identifier.SessionID })
const LeaseRow = Schema.Struct({ session_id: Identifier.SessionID, host_id: Schema.String })

/**
 * The `session_lease` rows as the host `host` reads and writes them, for both kinds of leases (these
 * and ShardLeases): the table is this module's. An SQL error on it is a defect (orDie).
 */
export const rows = (sql: SqlClient.SqlClient, host: string) => {
  /** Claims an unheld session: the row when it was inserted, nothing when someone holds it. */
  const insertLease = PreparedSql.make(
    sql,
    `INSERT INTO session_lease (session_id, host_id, time_claimed) VALUES (?, ?, ?)
    ON CONFLICT (session_id) DO NOTHING RETURNING host_id`
  )
  const insert = ({ now, sessionID }: { readonly sessionID: Identifier.SessionID; readonly now: number }) =>
    insertLease.all([sessionID, host, now])
  /** Takes the lease over from `from`, unless another claim changed it first (then nothing). */
  const takeOver = SqlSchema.findAll({
    Request: Schema.Struct({ sessionID: Identifier.SessionID, from: Schema.String, now: Schema.Number }),
    Result: SessionRow,
    execute: ({ from, now, sessionID }) => sql`
      UPDATE session_lease SET host_id = ${host}, time_claimed = ${now}, time_interrupt_requested = NULL
      WHERE session_id = ${sessionID} AND host_id = ${from} RETURNING session_id`
  })
  const requestInterrupt = Traced.fn("SessionLeases.requestInterrupt")(function* (sessionID: Identifier.SessionID) {
    yield* SqlSchema.void({
      Request: Schema.Struct({ sessionID: Identifier.SessionID, now: Schema.Number }),
      execute: ({ now, sessionID }) =>
        sql.onDialectOrElse({
          // The holder is told at once (see interruptSignal), when the update commits.
          pg: () => sql`
            WITH requested AS (
              UPDATE session_lease SET time_interrupt_requested = ${now}
              WHERE session_id = ${sessionID} AND host_id <> ${host} RETURNING host_id)
            SELECT pg_notify(${interruptChannel}, host_id) FROM requested`,
          orElse: () =>
            sql`UPDATE session_lease SET time_interrupt_requested = ${now} WHERE session_id = ${sessionID} AND host_id <> ${host}`
        })
    })({ sessionID, now: Date.now() }).pipe(Effect.orDie)
  })
  // Looked at every 250 ms for the life of the process: a Prepared Statement, and a read first, so
  // that no write lock is taken while there is nothing to take.
  const anyRequested = PreparedSql.make(
    sql,
    "SELECT 1 FROM session_lease WHERE host_id = ? AND time_interrupt_requested IS NOT NULL LIMIT 1"
  )
  const takeRequests = SqlSchema.findAll({
    Request: Schema.Void,
    Result: SessionRow,
    execute: () => sql`
      UPDATE session_lease SET time_interrupt_requested = NULL
      WHERE host_id = ${host} AND time_interrupt_requested IS NOT NULL RETURNING session_id`
  })
  const interruptRequests = Effect.gen(function* () {
    if ((yield* anyRequested.values([host])).length === 0) return []
    return (yield* takeRequests(undefined)).map((row) => row.session_id)
  }).pipe(Effect.orDie, Traced.withSpan("SessionLeases.interruptRequests"))
  const deleteLease = PreparedSql.make(sql, "DELETE FROM session_lease WHERE session_id = ? AND host_id = ?")
  const release = Traced.fn("SessionLeases.release")(function* (sessionID: Identifier.SessionID) {
    yield* deleteLease.run([sessionID, host]).pipe(Effect.orDie)
  }, Effect.uninterruptible)
  /**
   * The Commit Fence of a drain's commits to its own session (see the module doc): it passes while the
   * lease row names `host`. Inside the commit's transaction (its connection comes with the SqlClient
   * the log passes). A write that changes nothing, not a read: as the transaction's first statement
   * it takes the write lock (waiting for it like any write), where a read first would pin an older
   * SQLite snapshot and fail the append with SQLITE_BUSY once another process had committed since; on
   * PostgreSQL it locks the lease row, so a takeover cannot land between the check and the commit.
   * It rewrites `time_claimed`, which no index covers: rewriting the indexed `host_id` to itself cost
   * SQLite an index update per commit (a third of a small commit's time, measured).
   */
  const fenceOn = PreparedSql.perClient(`UPDATE session_lease SET time_claimed = time_claimed
    WHERE session_id = ? AND host_id = ? RETURNING session_id`)
  const fence = CommitFence.Service.of({
    check: (aggregateID) =>
      Effect.flatMap(FiberRef.get(driving), (session) =>
        session !== aggregateID
          ? Effect.void
          : Effect.flatMap(SqlClient.SqlClient, (tx) =>
              fenceOn(tx)
                .all([aggregateID, host])
                .pipe(
                  Effect.orDie,
                  Effect.flatMap((rows) =>
                    rows.length > 0 ? Effect.void : Effect.die(new CommitFence.CommitFenced({ aggregateID }))
                  )
                )
            )
      )
  })
  return { insert, takeOver, requestInterrupt, interruptRequests, release, fence }
}

/** The PostgreSQL channel on which an interrupt request names the host it is for (see {@link interruptSignal}). */
export const interruptChannel = "opencode_interrupt"

/**
 * What notifies `interruptRequested`, for the host `host`, until the scope closes: over PostgreSQL a
 * notification on {@link interruptChannel} naming it (sent by `requestInterrupt` as its update commits;
 * one listening connection, shared with the event log's); elsewhere nothing, so only the regular look
 * finds requests. A notification that arrives while nobody sleeps is kept (one at most).
 */
export const interruptSignal = Traced.fn("SessionLeases.interruptSignal")(function* (
  sql: SqlClient.SqlClient,
  host: string
) {
  if (!sql.onDialectOrElse({ pg: () => true, orElse: () => false })) return WakeSignal.never
  // Imported here, so a host over SQLite never loads the PostgreSQL driver.
  const { PgClient, listenForever } = yield* Effect.promise(() => import("../storage/postgres-database.js"))
  const pg = yield* Effect.serviceOption(PgClient.PgClient)
  if (Option.isNone(pg)) return WakeSignal.never
  const signal = WakeSignal.make()
  yield* listenForever(
    pg.value,
    interruptChannel,
    (payload) => (payload === host ? Effect.sync(signal.notify) : Effect.void),
    "listening for interrupt requests"
  )
  return signal
})

/**
 * Registers this process as a Runtime Host for the layer's lifetime: the row is written when the
 * layer is built, its heartbeat every `heartbeatMs`, and on close the host's remaining leases and
 * its row are deleted.
 */
export const layer = (options: Options = {}): Layer.Layer<Service | CommitFence.Service, never, SqlClient.SqlClient> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const host = crypto.randomUUID()
      const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs
      const expiryMs = options.expiryMs ?? defaultExpiryMs

      const live = (row: HostRow | undefined, now: number): boolean => {
        if (row === undefined) return false
        if (row.id === host) return true
        if (now - row.time_seen > expiryMs) return false
        return row.machine !== machine || processExists(row.pid)
      }

      // The lease and host tables are this module's alone; an SQL error on them is a defect (orDie).
      const register = Effect.suspend(() =>
        SqlSchema.void({
          Request: Schema.Number,
          execute: (now) => sql`INSERT INTO runtime_host (id, pid, machine, time_started, time_seen)
            VALUES (${host}, ${process.pid}, ${machine}, ${now}, ${now})
            ON CONFLICT (id) DO UPDATE SET time_seen = excluded.time_seen`
        })(Date.now())
      ).pipe(Effect.orDie)
      yield* register
      // A host that was judged dead (and forgotten) while it was only slow registers again.
      const heartbeat = Effect.suspend(() =>
        SqlSchema.findAll({
          Request: Schema.Number,
          Result: Schema.Struct({ id: Schema.String }),
          execute: (now) => sql`UPDATE runtime_host SET time_seen = ${now} WHERE id = ${host} RETURNING id`
        })(Date.now())
      ).pipe(
        Effect.orDie,
        Effect.flatMap((rows) => (rows.length === 0 ? register : Effect.void))
      )
      yield* Effect.forkScoped(WallClock.every(heartbeatMs, heartbeat))
      yield* Effect.addFinalizer(() =>
        Effect.all(
          [sql`DELETE FROM session_lease WHERE host_id = ${host}`, sql`DELETE FROM runtime_host WHERE id = ${host}`],
          {
            discard: true
          }
        ).pipe(Effect.ignoreLogged)
      )

      /** The session's lease and its holder's host row, when it still has one (a LEFT JOIN: its columns are null otherwise). */
      const selectHolder = PreparedSql.make(
        sql,
        `SELECT l.host_id AS holder, h.id, h.pid, h.machine, h.time_seen
        FROM session_lease l LEFT JOIN runtime_host h ON h.id = l.host_id
        WHERE l.session_id = ?`
      )
      /** The session's lease holder, with its host row when it still has one; undefined when nobody holds it. */
      const holder = (sessionID: Identifier.SessionID) =>
        selectHolder.all([sessionID]).pipe(
          Effect.flatMap(([row]) => (row === undefined ? Effect.succeed(undefined) : decodeHolderRow(row))),
          Effect.orDie,
          Effect.map((row) => (row === undefined ? undefined : { holder: row.holder, host: hostOf(row) }))
        )

      const { insert, takeOver, requestInterrupt, interruptRequests, release, fence } = rows(sql, host)
      const interruptRequested = yield* interruptSignal(sql, host)

      const claim = Traced.fn("SessionLeases.claim")(function* (sessionID: Identifier.SessionID) {
        const now = Date.now()
        for (;;) {
          // The usual case, one statement: nobody holds the session.
          if ((yield* insert({ sessionID, now }).pipe(Effect.orDie)).length > 0) return claimed
          const lease = yield* holder(sessionID)
          // Released in between: claim it afresh.
          if (lease === undefined) continue
          if (lease.holder === host) return claimed
          if (live(lease.host, now)) return { _tag: "Held", host: lease.holder } as const
          // The holder is dead: take the lease over, unless another claim changed it first.
          const taken = yield* takeOver({ sessionID, from: lease.holder, now }).pipe(Effect.orDie)
          if (taken.length > 0) return { _tag: "Claimed", from: lease.holder } as const
        }
      })

      const heldElsewhere = Traced.fn("SessionLeases.heldElsewhere")(function* (sessionID: Identifier.SessionID) {
        const lease = yield* holder(sessionID)
        return lease !== undefined && lease.holder !== host && live(lease.host, Date.now())
      })

      const holderRows = SqlSchema.findAll({
        Request: Schema.Array(Identifier.SessionID),
        Result: Schema.Struct({ session_id: Identifier.SessionID, ...HolderRow.fields }),
        execute: (ids) => sql`
          SELECT l.session_id, l.host_id AS holder, h.id, h.pid, h.machine, h.time_seen
          FROM session_lease l LEFT JOIN runtime_host h ON h.id = l.host_id
          WHERE l.session_id IN ${sql.in(ids)} AND l.host_id <> ${host}`
      })
      const heldElsewhereAmong = Traced.fn("SessionLeases.heldElsewhereAmong")(function* (
        sessionIDs: ReadonlyArray<Identifier.SessionID>
      ) {
        if (sessionIDs.length === 0) return new Set<Identifier.SessionID>()
        const rows = yield* holderRows(sessionIDs).pipe(Effect.orDie)
        const now = Date.now()
        return new Set(rows.filter((row) => live(hostOf(row), now)).map((row) => row.session_id))
      })

      const holding = Traced.fn("SessionLeases.holding")(function* (sessionID: Identifier.SessionID) {
        const lease = yield* holder(sessionID)
        if (lease === undefined) return "free" as const
        if (lease.holder === host) return "here" as const
        return live(lease.host, Date.now()) ? ("elsewhere" as const) : ("stopped" as const)
      })

      const allHosts = SqlSchema.findAll({
        Request: Schema.Void,
        Result: HostRow,
        execute: () => sql`SELECT id, pid, machine, time_seen FROM runtime_host`
      })
      const othersLeases = SqlSchema.findAll({
        Request: Schema.Void,
        Result: LeaseRow,
        execute: () => sql`SELECT session_id, host_id FROM session_lease WHERE host_id <> ${host} ORDER BY time_claimed`
      })
      const forgetHost = SqlSchema.void({
        Request: Schema.String,
        execute: (id) => sql`DELETE FROM runtime_host WHERE id = ${id}`
      })
      const orphaned = Effect.gen(function* () {
        const now = Date.now()
        const hosts = yield* allHosts(undefined)
        const byID = new Map(hosts.map((row) => [row.id, row]))
        const leases = yield* othersLeases(undefined)
        const dead = leases.filter((lease) => !live(byID.get(lease.host_id), now))
        const holding = new Set(leases.map((lease) => lease.host_id))
        for (const row of hosts) {
          if (!holding.has(row.id) && !live(row, now)) yield* forgetHost(row.id)
        }
        return dead.map((lease) => lease.session_id)
      }).pipe(Effect.orDie, Traced.withSpan("SessionLeases.orphaned"))

      return Context.make(
        Service,
        Service.of({
          host,
          heartbeatMs,
          claim,
          heldElsewhere,
          heldElsewhereAmong,
          holding,
          requestInterrupt,
          interruptRequests,
          interruptRequested,
          release,
          orphaned,
          gained: Effect.succeed(false),
          placedHere: () => true
        })
      ).pipe(Context.add(CommitFence.Service, fence))
    })
  )
