#!/usr/bin/env node
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { Cli } from "./cli.js"

// runMain interrupts the program on SIGINT/SIGTERM, which closes the listener, waits for
// in-flight requests and then closes the database, in that order (layer finalizers).
// The pretty logger is off: `serve` installs its own (stderr with --print-logs, else the log file).
NodeRuntime.runMain(Cli.run(process.argv).pipe(Effect.provide(NodeContext.layer)), { disablePrettyLogger: true })
