import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { describe, expect, it as plain } from "vitest"
import { Database } from "../../src/storage/database.js"
import { Migrations } from "../../src/storage/migrations.js"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresMigrations } from "../../src/storage/postgres-migrations.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"

/**
 * The two dialects' migrations give the same schema: each side is read from its own catalog
 * (`sqlite_master` and the `pragma_*` tables; `information_schema` and `pg_index`/`pg_constraint`)
 * into one normal form, and the forms must be equal. A migration added to one dialect only, or
 * written differently, fails here.
 */

/** A column, in table order. `type` is SQLite's; the PostgreSQL column must have its mapped type. */
interface Column {
  readonly name: string
  readonly type: string
  readonly notNull: boolean
  readonly default: string | null
}

/**
 * An index other than the primary key's. `name` is null for one a UNIQUE constraint created; a
 * descending column is named with ` DESC`.
 */
interface Index {
  readonly name: string | null
  readonly columns: ReadonlyArray<string>
  readonly unique: boolean
}

interface ForeignKey {
  readonly columns: ReadonlyArray<string>
  readonly table: string
  readonly references: ReadonlyArray<string>
  readonly onUpdate: string
  readonly onDelete: string
}

interface Table {
  readonly name: string
  readonly columns: ReadonlyArray<Column>
  readonly primaryKey: ReadonlyArray<string>
  readonly indexes: ReadonlyArray<Index>
  readonly foreignKeys: ReadonlyArray<ForeignKey>
}

/** The migrator's own bookkeeping table differs by design; the applied list is compared instead. */
const bookkeeping = "effect_sql_migrations"

const byName = <A extends { readonly name: string | null }>(items: ReadonlyArray<A>) =>
  [...items].sort((a, b) => JSON.stringify([a.name, a]).localeCompare(JSON.stringify([b.name, b])))

const sqliteSchema = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const names = yield* sql<{ name: string }>`
    SELECT name FROM sqlite_master
    WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> ${bookkeeping} ORDER BY name`
  return yield* Effect.forEach(names, ({ name }) =>
    Effect.gen(function* () {
      const columns = yield* sql<{
        name: string
        type: string
        notnull: number
        dflt_value: string | null
        pk: number
      }>`
        SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(${name}) ORDER BY cid`
      const indexList = yield* sql<{ name: string; unique: number; origin: string }>`
        SELECT name, "unique", origin FROM pragma_index_list(${name})`
      const indexes = yield* Effect.forEach(
        indexList.filter((index) => index.origin !== "pk"),
        (index) =>
          sql<{ name: string; desc: number }>`
            SELECT name, "desc" FROM pragma_index_xinfo(${index.name}) WHERE "key" = 1 ORDER BY seqno`.pipe(
            Effect.map(
              (cols): Index => ({
                name: index.origin === "c" ? index.name : null,
                columns: cols.map((c) => (c.desc === 1 ? `${c.name} DESC` : c.name)),
                unique: index.unique === 1
              })
            )
          )
      )
      const keys = yield* sql<{
        id: number
        table: string
        from: string
        to: string
        on_update: string
        on_delete: string
      }>`
        SELECT id, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(${name}) ORDER BY id, seq`
      const foreignKeys = [...new Set(keys.map((k) => k.id))].map((id): ForeignKey => {
        const parts = keys.filter((k) => k.id === id)
        return {
          columns: parts.map((k) => k.from),
          table: parts[0]?.table ?? "",
          references: parts.map((k) => k.to),
          onUpdate: parts[0]?.on_update ?? "",
          onDelete: parts[0]?.on_delete ?? ""
        }
      })
      return {
        name,
        columns: columns.map(
          (c): Column => ({
            name: c.name,
            type: c.type.toLowerCase(),
            // SQLite lets a non-integer primary key column hold NULL unless it says NOT NULL.
            notNull: c.notnull === 1,
            default: c.dflt_value
          })
        ),
        primaryKey: columns
          .filter((c) => c.pk > 0)
          .sort((a, b) => a.pk - b.pk)
          .map((c) => c.name),
        indexes: byName(indexes),
        foreignKeys: [...foreignKeys].sort((a, b) => a.columns.join().localeCompare(b.columns.join()))
      } satisfies Table
    })
  )
})

/** How each SQLite column type is declared in PostgreSQL (see `postgres-migrations.ts`). */
const pgTypeOf: Record<string, { readonly type: string; readonly collation: string | null }> = {
  integer: { type: "bigint", collation: null },
  text: { type: "text", collation: "C" }
}
const sqliteTypeOf = (type: string, collation: string | null) =>
  Object.entries(pgTypeOf).find(([, pg]) => pg.type === type && pg.collation === collation)?.[0] ??
  `unmapped PostgreSQL type ${type}${collation ? ` COLLATE "${collation}"` : ""}`

const actions: Record<string, string> = {
  a: "NO ACTION",
  r: "RESTRICT",
  c: "CASCADE",
  n: "SET NULL",
  d: "SET DEFAULT"
}

const postgresSchema = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const names = yield* sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> ${bookkeeping}
    ORDER BY table_name COLLATE "C"`
  return yield* Effect.forEach(names, ({ name }) =>
    Effect.gen(function* () {
      const columns = yield* sql<{
        name: string
        type: string
        nullable: string
        default: string | null
        collation: string | null
      }>`
        SELECT column_name AS name, data_type AS type, is_nullable AS nullable, column_default AS default,
          collation_name AS collation
        FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ${name} ORDER BY ordinal_position`
      const primaryKey = yield* sql<{ name: string }>`
        SELECT kcu.column_name AS name
        FROM information_schema.table_constraints tc
        JOIN information_schema.key_column_usage kcu
          ON kcu.constraint_schema = tc.constraint_schema AND kcu.constraint_name = tc.constraint_name
        WHERE tc.table_schema = current_schema() AND tc.table_name = ${name} AND tc.constraint_type = 'PRIMARY KEY'
        ORDER BY kcu.ordinal_position`
      const indexes = yield* sql<{ name: string; unique: boolean; constraint: boolean; columns: string }>`
        SELECT i.relname AS name, ix.indisunique AS unique,
          EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid AND c.contype = 'u') AS constraint,
          array_to_string(ARRAY(
            SELECT a.attname || CASE WHEN ix.indoption[k.ord - 1] & 1 = 1 THEN ' DESC' ELSE '' END
            FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum ORDER BY k.ord
          ), ',') AS columns
        FROM pg_index ix
        JOIN pg_class t ON t.oid = ix.indrelid
        JOIN pg_class i ON i.oid = ix.indexrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = current_schema() AND t.relname = ${name} AND NOT ix.indisprimary`
      const keys = yield* sql<{ table: string; columns: string; references: string; update: string; delete: string }>`
        SELECT f.relname AS table,
          array_to_string(ARRAY(
            SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.ord
          ), ',') AS columns,
          array_to_string(ARRAY(
            SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.ord
          ), ',') AS references,
          c.confupdtype AS update, c.confdeltype AS delete
        FROM pg_constraint c
        JOIN pg_class t ON t.oid = c.conrelid
        JOIN pg_class f ON f.oid = c.confrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = current_schema() AND t.relname = ${name} AND c.contype = 'f'`
      return {
        name,
        columns: columns.map(
          (c): Column => ({
            name: c.name,
            type: sqliteTypeOf(c.type, c.collation),
            notNull: c.nullable === "NO",
            // PostgreSQL shows a literal default with its cast: `'default'::text`.
            default: c.default === null ? null : c.default.replace(/::[a-z ]+$/, "")
          })
        ),
        primaryKey: primaryKey.map((c) => c.name),
        indexes: byName(
          indexes.map(
            (index): Index => ({
              name: index.constraint ? null : index.name,
              columns: index.columns.split(","),
              unique: index.unique
            })
          )
        ),
        foreignKeys: keys
          .map(
            (k): ForeignKey => ({
              columns: k.columns.split(","),
              table: k.table,
              references: k.references.split(","),
              onUpdate: actions[k.update] ?? k.update,
              onDelete: actions[k.delete] ?? k.delete
            })
          )
          .sort((a, b) => a.columns.join().localeCompare(b.columns.join()))
      } satisfies Table
    })
  )
})

const applied = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ migration_id: number; name: string }>`
    SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id`
  return rows.map((row) => [Number(row.migration_id), row.name] as const)
})

/** The tag's Migrator id and name, as both `Database` and `PostgresDatabase` derive them. */
const idOf = (tag: string) => {
  const [, number = "", name = ""] = /^(\d+)_(.+)$/.exec(tag) ?? []
  return `${Number(number) + 1}_${name}`
}

const sqliteUpTo = (count: number) =>
  SqliteMigrator.fromRecord(
    Object.fromEntries(
      Migrations.all.slice(0, count).map((migration) => [
        idOf(migration.tag),
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          for (const statement of migration.sql.split("--> statement-breakpoint")) {
            if (statement.trim() !== "") yield* sql.unsafe(statement)
          }
        })
      ])
    )
  )

const postgresUpTo = (count: number) =>
  PgMigrator.fromRecord(
    Object.fromEntries(
      PostgresMigrations.all.slice(0, count).map((migration) => [
        idOf(migration.tag),
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          for (const statement of migration.statements) yield* sql.unsafe(statement)
        })
      ])
    )
  )

plain("each SQLite migration has a PostgreSQL counterpart with the same tag, in the same order", () => {
  expect(PostgresMigrations.all.map((m) => m.tag)).toEqual(Migrations.all.map((m) => m.tag))
})

plain.runIf(PostgresServer.testable())("PostgreSQL's server binaries are installed for these tests", () => {
  expect(PostgresServer.binDirectory(), "initdb and pg_ctl (scripts/system-deps.sh installs them)").toBeDefined()
})

describe.runIf(PostgresServer.testable())("PostgreSQL and SQLite migrations", () => {
  layer(PostgresServer.layer(), { timeout: 60_000 })((it) => {
    it.scoped("give the same tables, columns, keys, indexes and foreign keys, and record the same migrations", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        const filename = path.join(yield* tempDir, "opencode.db")

        const sqlite = yield* Effect.all([sqliteSchema, applied]).pipe(Effect.provide(Database.layer({ filename })))
        const postgres = yield* Effect.all([postgresSchema, applied]).pipe(
          Effect.provide(PostgresDatabase.layer({ url }))
        )

        // The test reads something: the current schema's tables, every migration applied.
        expect(sqlite[0].map((t) => t.name)).toEqual(expect.arrayContaining(["event", "session", "session_revert"]))
        expect(sqlite[1].length).toBe(Migrations.all.length)
        for (let i = 0; i < sqlite[0].length; i++) expect(postgres[0][i]).toEqual(sqlite[0][i])
        expect(postgres[0].map((t) => t.name)).toEqual(sqlite[0].map((t) => t.name))
        expect(postgres[1]).toEqual(sqlite[1])
      })
    )

    it.scoped("migrating again applies nothing and keeps the rows", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_1', 3)`
        }).pipe(Effect.provide(PostgresDatabase.layer({ url })))
        const [rows, migrations] = yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          return [yield* sql`SELECT aggregate_id, seq FROM event_sequence`, yield* applied] as const
        }).pipe(Effect.provide(PostgresDatabase.layer({ url })))
        expect(rows).toEqual([{ aggregate_id: "ses_1", seq: 3 }])
        expect(migrations.length).toBe(PostgresMigrations.all.length)
      })
    )

    it.scoped("PostgresDatabase reads bigint as a number and text exactly, in byte order like SQLite", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        const filename = path.join(yield* tempDir, "opencode.db")
        const write = Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const info = '{ "b": 1,  "a": [2] }'
          for (const id of ["ses_b", "ses_B", "ses_a", "ses_É", "ses_10", "ses_9"]) {
            yield* sql`INSERT INTO session (id, project_id, directory, title, time_created, time_updated, info)
              VALUES (${id}, 'p', '/r', 't', ${1_780_000_000_123}, ${1_780_000_000_123}, ${info})`
          }
          return yield* sql<{ id: string; time_created: number; info: string; title_source: string }>`
            SELECT id, time_created, info, title_source FROM session ORDER BY time_created, id`
        })
        const sqlite = yield* write.pipe(Effect.provide(Database.layer({ filename })))
        const postgres = yield* write.pipe(Effect.provide(PostgresDatabase.layer({ url })))
        expect(postgres[0]).toEqual({
          id: "ses_10",
          time_created: 1_780_000_000_123,
          info: '{ "b": 1,  "a": [2] }',
          title_source: "default"
        })
        expect(postgres.map((row) => row.id)).toEqual(["ses_10", "ses_9", "ses_B", "ses_a", "ses_b", "ses_É"])
        expect(postgres).toEqual(sqlite)
      })
    )

    it.scoped("0011 renumbers the same old rows the same way in both dialects", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        const filename = path.join(yield* tempDir, "opencode.db")
        const before = Migrations.all.findIndex((m) => m.tag === "0011_session_origin_seq")
        expect(before).toBe(11)

        // Rows as the runtime wrote them before session.created became seq 0, in plain SQL both run.
        const oldRows = Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const session = (id: string) =>
            sql`INSERT INTO session (id, project_id, directory, title, time_created, time_updated, info)
              VALUES (${id}, 'p', '/r', 't', 1, 1, '{}')`
          const event = (aggregate: string, seq: number, type: string) =>
            sql`INSERT INTO event (id, aggregate_id, seq, type, version, data, time_created)
              VALUES (${`evt_${aggregate}_${seq}`}, ${aggregate}, ${seq}, ${type}, 1, '{}', 1)`
          yield* session("ses_old")
          yield* sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_old', 5)`
          yield* event("ses_old", 1, "session.created")
          yield* event("ses_old", 2, "session.next.prompt.admitted")
          yield* event("ses_old", 3, "session.next.prompted")
          yield* event("ses_old", 4, "session.next.step.started")
          yield* event("ses_old", 5, "session.next.step.ended")
          yield* sql`INSERT INTO message (id, session_id, seq, type, info, time_created)
            VALUES ('msg_user', 'ses_old', 3, 'user', '{}', 1), ('msg_assistant', 'ses_old', 4, 'assistant', '{}', 1)`
          yield* sql`INSERT INTO session_input (id, session_id, delivery, input, prompt, admitted_seq, promoted_seq, time_created)
            VALUES ('msg_user', 'ses_old', 'steer', '{}', '{}', 2, 3, 1), ('msg_pending', 'ses_old', 'queue', '{}', '{}', 5, NULL, 1)`
          yield* sql`INSERT INTO instruction_checkpoint (session_id, baseline_text, baseline_seq, applied, compaction_seq, revision, time_created, time_updated)
            VALUES ('ses_old', 'b', 3, '{}', 4, 1, 1, 1)`
          yield* sql`INSERT INTO session_revert (session_id, from_seq, to_seq, message_id, time_created)
            VALUES ('ses_old', 2, 4, 'msg_user', 1), ('ses_old', 5, 5, 'msg_x', 1)`
          yield* session("ses_new")
          yield* sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_new', 1)`
          yield* event("ses_new", 0, "session.created")
          yield* event("ses_new", 1, "session.next.prompt.admitted")
          yield* sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('per_1', 1)`
          yield* event("per_1", 1, "permission.v2.asked")
        })
        const rows = Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          return {
            events: yield* sql`SELECT aggregate_id, seq, type FROM event ORDER BY aggregate_id, seq`,
            sequences: yield* sql`SELECT aggregate_id, seq FROM event_sequence ORDER BY aggregate_id`,
            messages: yield* sql`SELECT id, seq FROM message ORDER BY seq`,
            inputs: yield* sql`SELECT id, admitted_seq, promoted_seq FROM session_input ORDER BY id`,
            checkpoints: yield* sql`SELECT baseline_seq, compaction_seq FROM instruction_checkpoint`,
            reverts: yield* sql`SELECT from_seq, to_seq FROM session_revert ORDER BY to_seq`
          }
        })

        yield* Effect.gen(function* () {
          yield* SqliteMigrator.run({ loader: sqliteUpTo(before) })
          yield* oldRows
        }).pipe(Effect.provide(SqliteClient.layer({ filename })), Effect.provide(NodeContext.layer))
        const sqlite = yield* rows.pipe(Effect.provide(Database.layer({ filename })))

        yield* Effect.gen(function* () {
          yield* PgMigrator.run({ loader: postgresUpTo(before) })
          yield* oldRows
        }).pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
          Effect.provide(NodeContext.layer),
          Effect.orDie
        )
        const postgres = yield* rows.pipe(Effect.provide(PostgresDatabase.layer({ url })))

        // The SQLite side is asserted in detail by session-origin-migration.test.ts; here: it moved.
        expect(sqlite.events.filter((e) => e.aggregate_id === "ses_old").map((e) => e.seq)).toEqual([0, 1, 2, 3, 4])
        expect(sqlite.checkpoints).toEqual([{ baseline_seq: 2, compaction_seq: 3 }])
        expect(postgres).toEqual(sqlite)
      })
    )
  })
})
