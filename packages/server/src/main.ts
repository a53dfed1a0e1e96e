import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit } from "effect"
import { Cli } from "./cli.js"

// runMain interrupts the program on SIGINT/SIGTERM, which closes the listener, waits for in-flight
// requests and then closes the database, in that order (layer finalizers); that exit is 0 unless the
// command set another for it (`run` interrupted by Ctrl-C: 130, see ExitCode.setOnInterrupt).
// `Cli.main` reports every failure itself, once, and resolves to the exit status: the runtime's own
// error report and pretty logger stay off (`serve` installs its own logger).
NodeRuntime.runMain(Cli.main(process.argv).pipe(Effect.provide(NodeContext.layer)), {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: (exit, onExit) =>
    onExit(
      Exit.isSuccess(exit)
        ? typeof exit.value === "number"
          ? exit.value
          : 0
        : Cause.isInterruptedOnly(exit.cause)
          ? Number(process.exitCode ?? 0)
          : 1
    )
})
