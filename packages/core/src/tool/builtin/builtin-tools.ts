export * as BuiltinTools from "./builtin-tools.js"

import type { FileSystem } from "@effect/platform"
import { Effect, Layer } from "effect"
import { ToolRegistry } from "../tool-registry.js"
import { ApplyPatchTool } from "./apply-patch-tool.js"
import { BashTool } from "./bash-tool.js"
import { EditTool } from "./edit-tool.js"
import { GlobTool } from "./glob-tool.js"
import { GrepTool } from "./grep-tool.js"
import { ReadTool } from "./read-tool.js"
import { TodoWriteTool } from "./todowrite-tool.js"
import { WebFetchTool } from "./webfetch-tool.js"
import { WriteTool } from "./write-tool.js"

export interface Options {
  /**
   * The Managed Tool Output directory (`Paths.toolOutputDir`): read and grep open its files without
   * an `external_directory` ask, wherever it lies.
   */
  readonly toolOutputDir?: string | undefined
  /** Passed to the read tool: called after each successful read (see `ReadTool.Options.onRead`). */
  readonly onRead?: ReadTool.Options["onRead"]
  readonly bash?: BashTool.Options | undefined
  /** Passed to the grep tool (its matching time limit); `toolOutputDir` above is passed to it too. */
  readonly grep?: Pick<GrepTool.Options, "timeLimit"> | undefined
  /** Passed to the webfetch tool (its body size limit). */
  readonly webfetch?: WebFetchTool.Options | undefined
}

/** The built-in tool names, in the order they are listed here. (`question` and `skill` live elsewhere.) */
export const names = ["read", "write", "edit", "apply_patch", "bash", "glob", "grep", "todowrite", "webfetch"] as const

/** Every built-in tool, over the given file system. */
export const make = (
  options: Options = {}
): Effect.Effect<ReadonlyArray<ToolRegistry.Tool>, never, FileSystem.FileSystem> =>
  Effect.all([
    ReadTool.make({ toolOutputDir: options.toolOutputDir, onRead: options.onRead }),
    WriteTool.make,
    EditTool.make,
    ApplyPatchTool.make,
    BashTool.make(options.bash),
    GlobTool.make,
    GrepTool.make({ ...options.grep, toolOutputDir: options.toolOutputDir }),
    TodoWriteTool.make,
    WebFetchTool.make(options.webfetch)
  ])

/**
 * Registers every built-in tool in the ToolRegistry for the layer's lifetime. A later registration of
 * the same name (a plugin, an embedded host) replaces a built-in until it is removed.
 */
export const layer = (options: Options = {}): Layer.Layer<never, never, ToolRegistry.Service | FileSystem.FileSystem> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const registry = yield* ToolRegistry.Service
      const tools = yield* make(options)
      yield* Effect.forEach(tools, (tool) => registry.register(tool), { discard: true })
    })
  )
