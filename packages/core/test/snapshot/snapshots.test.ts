import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Config, Locations, Snapshots, StepSnapshots } from "@opencode-ai/core"
import { Effect, Layer, Option } from "effect"

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    encoding: "utf8"
  })

/** A temporary project (a git repository when `repository`) and a Snapshots store over its own data dir. */
const setup = (
  options: {
    readonly repository?: boolean
    readonly snapshot?: boolean
    readonly home?: (project: string) => string
  } = {}
) =>
  Effect.gen(function* () {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-snapshots-")))
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    fs.writeFileSync(path.join(directory, "a.txt"), "a\n")
    if (options.repository === true) {
      git(directory, "init", "--quiet")
      git(directory, "add", "--all")
      git(directory, "commit", "--quiet", "-m", "initial")
    }
    const home = options.home?.(directory)
    const layer = Snapshots.layer({ dataDir: path.join(root, "data"), ...(home === undefined ? {} : { home }) }).pipe(
      Layer.provide(
        Layer.mergeAll(
          Locations.layer({ directory }).pipe(Layer.provide(NodeContext.layer)),
          Config.layerTest(options.snapshot === undefined ? {} : { snapshot: options.snapshot })
        )
      )
    )
    const store = yield* Effect.provide(Snapshots.Service, layer).pipe(Effect.orDie)
    const project = Option.getOrThrow(yield* store.project(directory))
    const write = (name: string, content: string) => {
      fs.mkdirSync(path.dirname(path.join(directory, name)), { recursive: true })
      fs.writeFileSync(path.join(directory, name), content)
    }
    const track = Effect.map(store.track(project), Option.getOrThrow)
    return { root, directory, store, project, write, track }
  })

describe("Snapshots", () => {
  it.effect("a snapshot is a tree id: an unchanged worktree gives the same one, a change a new one", () =>
    Effect.gen(function* () {
      const s = yield* setup({ repository: true })
      const first = yield* s.track
      expect(first).toMatch(/^[0-9a-f]{40}$/)
      expect(yield* s.track).toBe(first)
      s.write("dir/b.txt", "b\n")
      const second = yield* s.track
      expect(second).not.toBe(first)
      expect(yield* s.store.changed(s.project, first, second)).toEqual(["dir/b.txt"])
      // The shadow repository is in the data dir, named after the project; the user's .git is untouched.
      expect(fs.existsSync(path.join(s.root, "data", "snapshot", s.project.id, "HEAD"))).toBe(true)
      expect(git(s.directory, "status", "--porcelain")).toBe("?? dir/\n")
      expect(git(s.directory, "rev-list", "--count", "--all").trim()).toBe("1")
      expect(fs.readFileSync(path.join(s.root, "data", "snapshot", s.project.id, "config"), "utf8")).toMatch(/auto = 0/)
    })
  )

  it.effect("the worktree's .gitignore is honoured and .git itself is never snapshotted", () =>
    Effect.gen(function* () {
      const s = yield* setup({ repository: true })
      s.write(".gitignore", "build/\n")
      const first = yield* s.track
      s.write("build/out.js", "ignored\n")
      s.write("src/kept.ts", "kept\n")
      const second = yield* s.track
      expect(yield* s.store.changed(s.project, first, second)).toEqual(["src/kept.ts"])
    })
  )

  it.effect("diff reports added, modified and deleted files with counts and patches; restore puts them back", () =>
    Effect.gen(function* () {
      const s = yield* setup()
      const before = yield* s.track
      s.write("a.txt", "a\nmore\n")
      s.write("new/n.txt", "n\n")
      const after = yield* s.track
      const diff = yield* s.store.diff(s.project, after, before)
      expect(diff.map((file) => [file.path, file.status, file.additions, file.deletions])).toEqual([
        ["a.txt", "modified", 0, 1],
        ["new/n.txt", "deleted", 0, 1]
      ])
      expect(diff[0]!.patch).toContain("-more")
      expect(yield* s.store.diff(s.project, after, before, ["a.txt"])).toHaveLength(1)

      yield* s.store.restore(s.project, before, ["a.txt", "new/n.txt"])
      expect(fs.readFileSync(path.join(s.directory, "a.txt"), "utf8")).toBe("a\n")
      expect(fs.existsSync(path.join(s.directory, "new", "n.txt"))).toBe(false)
      yield* s.store.restore(s.project, after, ["new/n.txt"])
      expect(fs.readFileSync(path.join(s.directory, "new", "n.txt"), "utf8")).toBe("n\n")
      expect(fs.readFileSync(path.join(s.directory, "a.txt"), "utf8")).toBe("a\n")
    })
  )

  it.effect("concurrent snapshots of one project are serialized and all succeed", () =>
    Effect.gen(function* () {
      const s = yield* setup({ repository: true })
      const ids = yield* Effect.all(
        Array.from({ length: 6 }, () => s.track),
        { concurrency: "unbounded" }
      )
      expect(new Set(ids).size).toBe(1)
    })
  )

  it.effect('"snapshot": false in the config turns snapshots off', () =>
    Effect.gen(function* () {
      const s = yield* setup({ snapshot: false })
      expect(yield* s.store.track(s.project)).toEqual(Option.none())
      expect(fs.existsSync(path.join(s.root, "data", "snapshot"))).toBe(false)
    })
  )

  it.effect("a project rooted at the home directory is never snapshotted whole", () =>
    Effect.gen(function* () {
      const s = yield* setup({ home: (project) => project })
      expect(yield* s.store.track(s.project)).toEqual(Option.none())
    })
  )

  it.effect("an unknown snapshot is a SnapshotError", () =>
    Effect.gen(function* () {
      const s = yield* setup()
      yield* s.track
      const failed = yield* Effect.flip(s.store.changed(s.project, "0".repeat(40), "1".repeat(40)))
      expect(failed._tag).toBe("Core/SnapshotError")
    })
  )
})

describe("StepSnapshots", () => {
  it.effect("a Step's start snapshot is the worktree before it; with tools its end lists what changed", () =>
    Effect.gen(function* () {
      const s = yield* setup({ repository: true })
      const before = yield* s.track
      const around = yield* StepSnapshots.begin(Option.some(s.store), s.directory)
      expect(around.started).toEqual({ snapshot: before })
      s.write("dir/b.txt", "b\n")
      const ended = yield* around.end(true)
      expect(ended.snapshot).not.toBe(before)
      expect(ended.files).toEqual(["dir/b.txt"])
      expect(ended.snapshot).toBe(yield* s.track)
    })
  )

  it.effect("a Step that ran no tool ends on its start snapshot, with no changed files", () =>
    Effect.gen(function* () {
      const s = yield* setup({ repository: true })
      const around = yield* StepSnapshots.begin(Option.some(s.store), s.directory)
      const started = around.started
      expect(started.snapshot).toBe(yield* s.track)
      expect(yield* around.end(false)).toEqual({ snapshot: started.snapshot, files: [] })
    })
  )

  it.effect("without the Snapshots service a Step records no snapshot fields", () =>
    Effect.gen(function* () {
      const around = yield* StepSnapshots.begin(Option.none(), os.tmpdir())
      expect(around.started).toEqual({})
      expect(yield* around.end(true)).toEqual({})
    })
  )
})
