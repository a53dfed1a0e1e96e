export * as Core from "./core.js"

import { NodeContext } from "@effect/platform-node"
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import * as EventLog from "./event/event-log.js"
import * as Locations from "./location/locations.js"
import * as Sessions from "./session/sessions.js"
import * as Database from "./storage/database.js"

export interface Options {
  /** The SQLite file holding every session; created (with its directory) when missing. */
  readonly databaseFile: string
  /** The instance directory: the default Location, and the base of relative directories. */
  readonly directory: string
}

/** Everything a host (the server, the embedded SDK) needs from the runtime. */
export type Services = Sessions.Service | EventLog.Service | Locations.Service | SqlClient.SqlClient

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
  return Layer.mergeAll(
    Layer.fresh(Sessions.layer).pipe(Layer.provideMerge(eventLog)),
    Locations.layer({ directory: options.directory }).pipe(Layer.provide(NodeContext.layer))
  )
}
