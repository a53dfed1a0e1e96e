/**
 * A test process that starts a PostgresServer, prints `started {"pid":…,"directory":…}` and waits to
 * be killed: postgres-server.test.ts SIGKILLs it to check that the server does not outlive it.
 */
import { Effect } from "effect"
import { PostgresServer } from "../../src/testing/postgres-server.js"

Effect.gen(function* () {
  const server = yield* PostgresServer.make()
  process.stdout.write(`started ${JSON.stringify({ pid: server.pid, directory: server.directory })}\n`)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.runFork)
