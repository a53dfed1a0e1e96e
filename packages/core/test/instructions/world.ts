import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import type { Location } from "@opencode-ai/schema"
import { Effect, Schema, type Scope } from "effect"
import type { Core } from "../../src/core.js"
import { EventLog } from "../../src/event/event-log.js"
import { ContextUpdated } from "../../src/instructions/context-updated.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { tempDir } from "../fixture.js"

/**
 * A real little world on disk for instruction tests: a global config directory, a project root with a
 * nested package (the Location), and one database file. Nothing is stubbed.
 *
 *   <dir>/config/AGENTS.md              global
 *   <dir>/repo/AGENTS.md                project root
 *   <dir>/repo/packages/app/AGENTS.md   the Location directory
 */
export interface World {
  readonly dir: string
  readonly databaseFile: string
  readonly configDir: string
  readonly root: string
  readonly app: string
  readonly location: Location.LocationInfo
  /** A fresh Core over the world's database file (a new "process" each time it is provided). */
  readonly core: (env?: Record<string, string | undefined>) => ReturnType<typeof Core.layer>
}

export const world: Effect.Effect<World, never, Scope.Scope> = Effect.map(tempDir, (dir) => {
  const configDir = path.join(dir, "config")
  const root = path.join(dir, "repo")
  const app = path.join(root, "packages", "app")
  fs.mkdirSync(configDir, { recursive: true })
  fs.mkdirSync(app, { recursive: true })
  const databaseFile = path.join(dir, "opencode.db")
  return {
    dir,
    databaseFile,
    configDir,
    root,
    app,
    location: { directory: app, project: { id: "prj_test", directory: root } },
    core: (env = {}) => TestDatabase.coreLayer({ databaseFile, directory: dir, configDir, env })
  }
})

export const write = (file: string, content: string) =>
  Effect.sync(() => {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  })

export const remove = (file: string) => Effect.sync(() => fs.rmSync(file, { recursive: true, force: true }))

/**
 * Makes `file` exist but fail to read with an error other than "not found" (a unix socket: reading it
 * fails with ENXIO), until the scope closes or the returned effect runs. Unlike a permission error it
 * also works when the tests run as root.
 */
export const unreadable = (file: string): Effect.Effect<Effect.Effect<void>, never, Scope.Scope> =>
  Effect.gen(function* () {
    yield* remove(file)
    const server = yield* Effect.async<net.Server>((resume) => {
      const server = net.createServer()
      server.listen(file, () => resume(Effect.succeed(server)))
    })
    const close = Effect.async<void>((resume) => {
      if (!server.listening) return resume(Effect.void)
      server.close(() => resume(Effect.void))
    }).pipe(Effect.zipRight(remove(file)))
    yield* Effect.addFinalizer(() => close)
    return close
  })

/** The session's admitted Instruction Updates, decoded. */
export const contextUpdates = (sessionID: string) =>
  Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)).pipe(
    Effect.map((events) => events.filter((event) => event.type === ContextUpdated.type)),
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(ContextUpdated.Envelope))),
    Effect.orDie
  )

/** The types of the session's durable events, in seq order. */
export const eventTypes = (sessionID: string) =>
  Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)).pipe(
    Effect.map((events) => events.map((event) => event.type))
  )
