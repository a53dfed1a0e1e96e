/**
 * A host that exits without closing anything, for `mcp-servers.test.ts`: builds McpServers with the
 * one `local` server given as JSON, waits for it to connect, prints `connected <pid>` and calls
 * `process.exit(0)` with the connection still open.
 *
 *   node --import tsx test/mcp/host-exit.child.ts '<McpLocal json>'
 */

import { Effect, Layer } from "effect"
import { Config } from "../../src/config/config.js"
import { McpServers } from "../../src/mcp/mcp-servers.js"
import { ToolRegistry } from "../../src/tool/tool-registry.js"

const server = JSON.parse(process.argv[2] ?? "{}")

const program = Effect.gen(function* () {
  const servers = yield* McpServers.Service
  yield* servers.settled
  const [entry] = yield* servers.list
  const pid = entry?.status._tag === "Connected" ? entry.status.pid : undefined
  process.stdout.write(`connected ${pid}\n`)
  process.exit(0)
})

Effect.runFork(
  Effect.scoped(
    Effect.provide(
      program,
      McpServers.layer({ env: process.env, directory: process.cwd() }).pipe(
        Layer.provideMerge(ToolRegistry.layer),
        Layer.provide(Config.layerTest({ mcp: { docs: server } }))
      )
    )
  )
)
