export * as Paths from "./paths.js"

import * as path from "node:path"

/** Where the runtime keeps its files. */
export interface Paths {
  /** `$XDG_DATA_HOME/opencode`, default `~/.local/share/opencode`. */
  readonly dataDir: string
  /** `$OPENCODE_DB`, default `<dataDir>/opencode.db`. */
  readonly databaseFile: string
  /** `<dataDir>/tool-output`: where Managed Tool Output Files live. */
  readonly toolOutputDir: string
  /** `$XDG_CONFIG_HOME/opencode`, default `~/.config/opencode`: the global config directory. */
  readonly configDir: string
  /** `$XDG_CACHE_HOME/opencode`, default `~/.cache/opencode`: files the runtime can fetch again. */
  readonly cacheDir: string
  /** `<cacheDir>/models.json`: the model database last fetched (models.dev's `api.json`). */
  readonly modelsFile: string
}

/** An unset or empty variable counts as absent, as in the XDG base directory specification. */
const variable = (env: Record<string, string | undefined>, name: string): string | undefined => {
  const value = env[name]
  return value === undefined || value === "" ? undefined : value
}

/** Derives the runtime's paths from an environment and a home directory. Pure. */
export const fromEnv = (env: Record<string, string | undefined>, home: string): Paths => {
  const dataDir = path.join(variable(env, "XDG_DATA_HOME") ?? path.join(home, ".local", "share"), "opencode")
  const cacheDir = path.join(variable(env, "XDG_CACHE_HOME") ?? path.join(home, ".cache"), "opencode")
  return {
    dataDir,
    databaseFile: variable(env, "OPENCODE_DB") ?? path.join(dataDir, "opencode.db"),
    toolOutputDir: path.join(dataDir, "tool-output"),
    configDir: path.join(variable(env, "XDG_CONFIG_HOME") ?? path.join(home, ".config"), "opencode"),
    cacheDir,
    modelsFile: path.join(cacheDir, "models.json")
  }
}
