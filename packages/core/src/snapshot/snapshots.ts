export * as Snapshots from "./snapshots.js"

/**
 * Snapshots: file snapshots of a project's worktree, kept in a shadow git repository of the data
 * directory, one per project: `git --git-dir=<dataDir>/snapshot/<projectID> --work-tree=<project root>`.
 * The user's own `.git` is never read or written (git skips any `.git` inside a work tree), and a
 * project without git is snapshotted the same way. Honours the worktree's `.gitignore` files.
 *
 * A snapshot is the id of a git tree object, the one `git add --all` into the shadow index then
 * `git write-tree` would give. The Tree Writer writes it in this process, with no git process (see
 * `tree-writer.ts`); where it declines (attributes, nested repositories, very large trees), git runs
 * both commands as one process. Trees of unchanged content are shared, so a Step that changes nothing
 * costs no storage. The shadow repository is created with `gc.auto = 0`, so git never prunes a snapshot on its
 * own: snapshots are kept for as long as the data directory (sessions cannot be deleted yet; removing
 * `<dataDir>/snapshot/<projectID>` drops a project's snapshots, and a revert to a Step whose snapshot is
 * gone then restores nothing).
 *
 * Paths in results are relative to the project root, with `/` separators. Calls on one project are
 * serialized in this process (git's shadow index is one file); a call that finds the index locked by
 * another process tries again a few times.
 */

import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Session } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { Config } from "../config/config.js"
import { Locations } from "../location/locations.js"
import { Traced } from "../observability/traced.js"
import * as FifoLock from "../sync/fifo-lock.js"
import * as TreeWriter from "./tree-writer.js"

/** A git command of the shadow repository failed (git missing, a corrupt store, an unknown snapshot). */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("Core/SnapshotError", {
  message: Schema.String
}) {}

/** Where a snapshot is taken: the project's root directory and its id (the shadow repository's name). */
export interface Project {
  readonly id: string
  readonly directory: string
}

export interface Interface {
  /** `<dataDir>/snapshot`: the directory holding one shadow repository per project. */
  readonly directory: string
  /**
   * The project of a Location directory (its git worktree root, or the directory itself outside git),
   * as Locations resolves it. None when the directory no longer exists.
   */
  readonly project: (directory: string) => Effect.Effect<Option.Option<Project>>
  /**
   * Snapshots the project's whole worktree now and returns the snapshot id. Never fails: a failure
   * (git missing, an unwritable data directory) is logged and gives None, so a Step never fails
   * because its snapshot could not be taken. None as well when the config says `"snapshot": false`,
   * and for a project whose root is the filesystem root or the home directory (never copied whole).
   */
  readonly track: (project: Project) => Effect.Effect<Option.Option<string>>
  /** The files that differ between two snapshots, sorted. */
  readonly changed: (project: Project, from: string, to: string) => Effect.Effect<ReadonlyArray<string>, SnapshotError>
  /**
   * Per-file diffs from snapshot `from` to snapshot `to`, restricted to `files` when given, sorted by
   * path: `added` when the file exists only in `to`, `deleted` when only in `from`, with the line counts
   * (0 for binary files) and the unified patch.
   */
  readonly diff: (
    project: Project,
    from: string,
    to: string,
    files?: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Session.FileDiff>, SnapshotError>
  /**
   * Makes each of `files` in the worktree what it is in `snapshot`: rewritten from it when it exists
   * there, deleted when it does not (emptied parent directories are left). Other files are untouched.
   */
  readonly restore: (
    project: Project,
    snapshot: string,
    files: ReadonlyArray<string>
  ) => Effect.Effect<void, SnapshotError>
}

/** `yield* Snapshots.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Snapshots")<Service, Interface>() {}

export interface Options {
  /** The data directory; the shadow repositories live in `<dataDir>/snapshot/`. */
  readonly dataDir: string
  /** The home directory, which is never snapshotted whole; default `os.homedir()`. */
  readonly home?: string | undefined
}

interface Output {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * git's environment: no inherited GIT_* variable may point it at another repository. Built once per
 * layer (the process environment is read when the layer is built), not at every run.
 */
const gitEnvironment = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries({ ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" }).filter(
      ([name]) => !name.startsWith("GIT_") || name === "GIT_TERMINAL_PROMPT"
    )
  )

/** Runs git once with `args`, collecting its output; interruption kills it. */
const run = (args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv): Effect.Effect<Output, SnapshotError> =>
  Effect.async<Output, SnapshotError>((resume, signal) => {
    const child = spawn("git", args, { cwd, signal, stdio: ["ignore", "pipe", "pipe"], env })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.on("error", (error) => resume(Effect.fail(new SnapshotError({ message: `git: ${error.message}` }))))
    child.on("close", (code) =>
      resume(
        Effect.succeed({
          code: code ?? -1,
          stdout: Buffer.concat(out).toString("utf8"),
          stderr: Buffer.concat(err).toString("utf8")
        })
      )
    )
  })

/** The git alias that takes a snapshot (see `track`): stage the whole work tree, then write its tree. */
const snapshotAlias = "opencode-snapshot"
const snapshotCommand = "!git add --all -- . && git write-tree"

/** The `-z` separated fields of git output. */
const fields = (output: string): Array<string> => output.split("\0").filter((field) => field !== "")

export const layer = (options: Options): Layer.Layer<Service, never, Locations.Service | Config.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const locations = yield* Locations.Service
      const enabled = (yield* Config.Service).info.snapshot !== false
      // A session working in `/` or `~` (no project around it) would copy everything below it.
      const tooBroad = new Set([path.parse(process.cwd()).root, path.resolve(options.home ?? os.homedir())])
      const directory = path.join(options.dataDir, "snapshot")
      const env = gitEnvironment()
      const locks = new Map<string, FifoLock.FifoLock>()
      const lockOf = (id: string) => {
        let lock = locks.get(id)
        if (lock === undefined) {
          lock = FifoLock.unsafeMake()
          locks.set(id, lock)
        }
        return lock
      }

      const gitDir = (project: Project) => path.join(directory, project.id)
      const writers = new Map<string, TreeWriter.TreeWriter>()
      /** The user's global excludes and attributes files, as git resolves them (read once, with git). */
      let globals: { readonly excludes: string; readonly attributes: string } | undefined
      const writerOf = (project: Project) =>
        Effect.gen(function* () {
          if (globals === undefined) {
            const configured = new Map<string, string>()
            const result = yield* run(
              ["config", "--get-regexp", "^core\\.(excludesfile|attributesfile)$"],
              project.directory,
              env
            )
            for (const line of result.stdout.split("\n")) {
              const at = line.indexOf(" ")
              if (at > 0) configured.set(line.slice(0, at).toLowerCase(), line.slice(at + 1))
            }
            const home = (file: string) => (file.startsWith("~/") ? path.join(os.homedir(), file.slice(2)) : file)
            globals = {
              excludes: home(configured.get("core.excludesfile") ?? TreeWriter.defaultGlobalFile("ignore", env)),
              attributes: home(configured.get("core.attributesfile") ?? TreeWriter.defaultGlobalFile("attributes", env))
            }
          }
          let writer = writers.get(project.id)
          if (writer === undefined) {
            writer = TreeWriter.make({
              gitDir: gitDir(project),
              workTree: project.directory,
              globalExcludes: globals.excludes,
              globalAttributes: globals.attributes
            })
            writers.set(project.id, writer)
          }
          return writer
        })
      const base = (project: Project) => [
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.quotepath=false",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.safecrlf=false",
        `--git-dir=${gitDir(project)}`,
        `--work-tree=${project.directory}`
      ]

      /** git in the project's shadow repository; a non-zero exit fails (retried while the index is locked). */
      const git = (project: Project, ...args: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          for (let attempt = 1; ; attempt++) {
            const result = yield* run([...base(project), ...args], project.directory, env)
            if (result.code === 0) return result.stdout
            if (attempt < 5 && result.stderr.includes("index.lock")) {
              yield* Effect.sleep(50 * attempt)
              continue
            }
            return yield* new SnapshotError({
              message: `git ${args[0]} failed (${result.code}): ${result.stderr.trim().slice(0, 400)}`
            })
          }
        })

      /** Creates the shadow repository on first use. */
      const ensure = (project: Project) =>
        Effect.gen(function* () {
          if (fs.existsSync(path.join(gitDir(project), "HEAD"))) return
          yield* Effect.try({
            try: () => fs.mkdirSync(gitDir(project), { recursive: true }),
            catch: (error) => new SnapshotError({ message: `cannot create the snapshot store: ${String(error)}` })
          })
          yield* git(project, "init", "--quiet")
          // Never prune a snapshot behind our back, and never rewrite line endings or follow hooks.
          yield* git(project, "config", "gc.auto", "0")
          yield* git(project, "config", "core.symlinks", "true")
          yield* git(project, "config", "core.hooksPath", "/dev/null")
        })

      const serialized = <A, E>(project: Project, effect: Effect.Effect<A, E>) => lockOf(project.id).withLock(effect)

      const projectOf = Traced.fn("Snapshots.project")(function* (location: string) {
        const resolved = yield* Effect.either(locations.resolve({ directory: location }))
        if (resolved._tag === "Left") return Option.none<Project>()
        return Option.some({ id: resolved.right.project.id, directory: resolved.right.project.directory })
      })

      const track = Traced.fn("Snapshots.track")(function* (project: Project) {
        if (!enabled || tooBroad.has(path.resolve(project.directory))) return Option.none<string>()
        const taken = yield* serialized(
          project,
          Effect.gen(function* () {
            yield* ensure(project)
            const written = (yield* writerOf(project)).write()
            if (written !== undefined) return written
            // `git add --all` then `git write-tree`, as ONE process started from here: git runs the
            // alias through its shell, in the work tree's root, with the repository, the work tree
            // and the `-c` settings passed on. A second fork of this (large) process would cost more
            // than both git commands.
            return (yield* git(project, "-c", `alias.${snapshotAlias}=${snapshotCommand}`, snapshotAlias)).trim()
          })
        ).pipe(Effect.either)
        if (taken._tag === "Left") {
          yield* Effect.logWarning("could not take a file snapshot", { project: project.directory, error: taken.left })
          return Option.none<string>()
        }
        return Option.some(taken.right)
      })

      const changed = Traced.fn("Snapshots.changed")(function* (project: Project, from: string, to: string) {
        if (from === to) return []
        const output = yield* serialized(project, git(project, "diff", "--no-renames", "--name-only", "-z", from, to))
        return fields(output).sort()
      })

      const diff = Traced.fn("Snapshots.diff")(function* (
        project: Project,
        from: string,
        to: string,
        files?: ReadonlyArray<string>
      ) {
        if (from === to || files?.length === 0) return []
        const paths = files === undefined ? [] : ["--", ...files]
        return yield* serialized(
          project,
          Effect.gen(function* () {
            const status = fields(
              yield* git(project, "diff", "--no-renames", "--name-status", "-z", from, to, ...paths)
            )
            const numstat = fields(yield* git(project, "diff", "--no-renames", "--numstat", "-z", from, to, ...paths))
            const counts = new Map<string, { additions: number; deletions: number }>()
            for (const line of numstat) {
              const [added, deleted, ...rest] = line.split("\t")
              const file = rest.join("\t")
              counts.set(file, {
                additions: added === "-" ? 0 : Number(added),
                deletions: deleted === "-" ? 0 : Number(deleted)
              })
            }
            const result: Array<Session.FileDiff> = []
            for (let i = 0; i + 1 < status.length; i += 2) {
              const code = status[i]!
              const file = status[i + 1]!
              const patch = yield* git(project, "diff", "--no-renames", "--no-color", from, to, "--", file)
              result.push({
                path: file,
                status: code.startsWith("A") ? "added" : code.startsWith("D") ? "deleted" : "modified",
                additions: counts.get(file)?.additions ?? 0,
                deletions: counts.get(file)?.deletions ?? 0,
                patch
              })
            }
            return result.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
          })
        )
      })

      const restore = Traced.fn("Snapshots.restore")(function* (
        project: Project,
        snapshot: string,
        files: ReadonlyArray<string>
      ) {
        if (files.length === 0) return
        yield* serialized(
          project,
          Effect.gen(function* () {
            const present = new Set(
              fields(yield* git(project, "ls-tree", "-r", "-z", "--name-only", snapshot, "--", ...files))
            )
            const restored = files.filter((file) => present.has(file))
            if (restored.length > 0) yield* git(project, "checkout", snapshot, "--", ...restored)
            for (const file of files) {
              if (present.has(file)) continue
              const target = path.join(project.directory, file)
              yield* Effect.try({
                try: () => fs.rmSync(target, { force: true }),
                catch: (error) => new SnapshotError({ message: `cannot delete ${file}: ${String(error)}` })
              })
            }
          })
        )
      })

      return Service.of({ directory, project: projectOf, track, changed, diff, restore })
    })
  )
