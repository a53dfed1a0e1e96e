/**
 * A host's first start, reduced to its database: opens and migrates the PostgreSQL database at argv[2]
 * (`PostgresDatabase.layer`), prints `migrated` and exits 0; a failure prints its cause and exits 1.
 * postgres-first-start.test.ts starts several at once on an empty database.
 */
import { Effect, Layer } from "effect"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"

const url = process.argv[2] ?? ""
Layer.build(PostgresDatabase.layerFallible({ url, maxConnections: 2 }))
  .pipe(
    Effect.scoped,
    Effect.tap(() => Effect.sync(() => process.stdout.write("migrated\n"))),
    Effect.runPromiseExit
  )
  .then((exit) => {
    if (exit._tag === "Failure") process.stderr.write(`${String(exit.cause)}\n`)
    process.exit(exit._tag === "Success" ? 0 : 1)
  })
