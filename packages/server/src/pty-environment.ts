export * as PtyEnvironment from "./pty-environment.js"

import { Context, Effect, Layer } from "effect"

/**
 * The PTY Environment: the environment overlay a host applies when a PTY is created, observed for
 * the request's Location and the PTY's resolved working directory. It is the host's concern, not
 * Core's: Core merges it over the caller's `env` and under its own forced terminal variables (see
 * `Ptys.environment`). A standalone server has no plugins to ask, so its adapter is empty; an
 * embedding host may supply its own.
 */
export interface Interface {
  /** The variables to set for a PTY of Location `directory` starting in `cwd` (both absolute). */
  readonly get: (input: { readonly directory: string; readonly cwd: string }) => Effect.Effect<Record<string, string>>
}

export class Service extends Context.Tag("@opencode-ai/server/PtyEnvironment")<Service, Interface>() {}

/** The standalone server's adapter: no overlay. */
export const empty: Interface = { get: () => Effect.succeed({}) }

export const layer = (adapter: Interface = empty): Layer.Layer<Service> => Layer.succeed(Service, adapter)
