export * as Core from "./core.js"

import { NodeContext } from "@effect/platform-node"
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import * as os from "node:os"
import * as Paths from "./config/paths.js"
import * as EventLog from "./event/event-log.js"
import * as InstructionCheckpoint from "./instructions/instruction-checkpoint.js"
import * as InstructionDiscovery from "./instructions/instruction-discovery.js"
import * as InstructionEntries from "./instructions/instruction-entries.js"
import * as Locations from "./location/locations.js"
import * as SessionInstructions from "./instructions/session-instructions.js"
import * as Sessions from "./session/sessions.js"
import * as Database from "./storage/database.js"

export interface Options {
  /** The SQLite file holding every session; created (with its directory) when missing. */
  readonly databaseFile: string
  /** The instance directory: the default Location, and the base of relative directories. */
  readonly directory: string
  /** The global config directory; default `Paths.fromEnv(env, os.homedir()).configDir`. */
  readonly configDir?: string | undefined
  /** The environment the runtime honours (e.g. `OPENCODE_DISABLE_PROJECT_CONFIG`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
}

/** Everything a host (the server, the embedded SDK) needs from the runtime. */
export type Services =
  | Sessions.Service
  | EventLog.Service
  | Locations.Service
  | InstructionCheckpoint.Service
  | InstructionEntries.Service
  | InstructionDiscovery.Service
  | SessionInstructions.Service
  | SqlClient.SqlClient

/**
 * The runtime over one database file: it resolves once the database is open and migrated. Each
 * call owns its own connection, event bus and caches, so two layers on two files share nothing,
 * even when built with one memo map.
 * Closing the scope it was built in closes the database.
 */
export const layer = (options: Options): Layer.Layer<Services> => {
  const database = Database.layer({ filename: options.databaseFile })
  // Fresh: the service layers are constants, and a shared memo map (as in an embedded host running
  // several instances) would otherwise hand one instance's services to another.
  const eventLog = Layer.fresh(EventLog.layer).pipe(Layer.provideMerge(database))
  const env = options.env ?? process.env
  const configDir = options.configDir ?? Paths.fromEnv(env, os.homedir()).configDir
  const stores = Layer.mergeAll(
    Layer.fresh(Sessions.layer),
    Layer.fresh(InstructionCheckpoint.layer),
    Layer.fresh(InstructionEntries.layer)
  ).pipe(Layer.provideMerge(eventLog))
  const discovery = InstructionDiscovery.layer({ configDir, env }).pipe(Layer.provide(NodeContext.layer))
  return Layer.mergeAll(
    stores,
    discovery,
    Layer.fresh(SessionInstructions.layer).pipe(Layer.provide(Layer.mergeAll(stores, discovery, NodeContext.layer))),
    Locations.layer({ directory: options.directory }).pipe(Layer.provide(NodeContext.layer))
  )
}
