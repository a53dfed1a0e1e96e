export * as ToolPath from "./tool-path.js"

import * as path from "node:path"
import { Effect } from "effect"
import type { ToolRegistry } from "../tool-registry.js"

/**
 * The absolute path a tool argument names: relative paths resolve against the call's Location
 * directory, absolute ones are taken as given (normalized, `..` collapsed). Pure.
 */
export const resolve = (context: ToolRegistry.CallContext, value: string): string =>
  path.resolve(context.directory, value)

/** Whether `target` is `parent` or lies below it, lexically (both absolute). Pure. */
export const isWithin = (parent: string, target: string): boolean => {
  const relative = path.relative(parent, target)
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
}

/** `target` relative to the Location directory, as edit permissions name files (e.g. `src/a.ts`). Pure. */
export const relative = (context: ToolRegistry.CallContext, target: string): string =>
  path.relative(context.directory, target) || "."

/**
 * Asks `external_directory` when `target` lies outside the call's Location directory. The resource is
 * the containing directory as a glob (`<dir>/*`, the directory itself for `kind: "directory"`), the
 * shape the agents' rules are written in (e.g. `<data>/tool-output/*` allowed, `*` ask).
 *
 * `managedDir` (the Managed Tool Output directory) is exempt: its files are readable and searchable by
 * ordinary tools wherever it lies, so read and grep pass it to reach a bounded output's full text.
 */
export const authorize = (
  context: ToolRegistry.CallContext,
  target: string,
  options: { readonly kind: "file" | "directory"; readonly managedDir?: string | undefined }
): Effect.Effect<void, ToolRegistry.ToolFailure> => {
  if (isWithin(context.directory, target)) return Effect.void
  if (options.managedDir !== undefined && isWithin(options.managedDir, target)) return Effect.void
  const parentDir = options.kind === "directory" ? target : path.dirname(target)
  return context.ask({
    action: "external_directory",
    resources: [path.join(parentDir, "*")],
    metadata: { filepath: target, parentDir }
  })
}
