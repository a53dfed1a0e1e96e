import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { CommandExecutor } from "@effect/platform"
import { SystemError } from "@effect/platform/Error"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { expect } from "vitest"
import { Locations } from "../../src/location/locations.js"
import { tempDir } from "../fixture.js"

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync(
    "git",
    ["-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", ...args],
    {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    }
  ).trim()

const resolveIn = (directory: string, ref?: Locations.Ref) =>
  Effect.flatMap(Locations.Service, (locations) => locations.resolve(ref)).pipe(
    Effect.provide(Locations.layer({ directory }).pipe(Layer.provide(NodeContext.layer)))
  )

const invalid = (field: string) =>
  Exit.fail(expect.objectContaining({ _tag: "InvalidRequestError", kind: "location", field }))

it.scoped("a directory outside git is its own project, identified by a stable hash of its path", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    fs.mkdirSync(path.join(dir, "sub"))
    const location = yield* resolveIn(dir)
    expect(location).toEqual({ directory: dir, project: { id: Locations.directoryHash(dir), directory: dir } })
    expect(location.project.id).toMatch(/^[0-9a-f]{40}$/)
    const sub = yield* resolveIn(dir, { directory: "sub" })
    expect(sub).toEqual({
      directory: path.join(dir, "sub"),
      project: { id: Locations.directoryHash(path.join(dir, "sub")), directory: path.join(dir, "sub") }
    })
  })
)

it.scoped("inside a git worktree the project is the root commit and the directory the toplevel", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const repo = path.join(dir, "repo")
    fs.mkdirSync(path.join(repo, "packages", "app"), { recursive: true })
    git(repo, "init", "-q")
    // No commits yet: the project falls back to the toplevel's hash.
    expect((yield* resolveIn(repo, { directory: "packages/app" })).project).toEqual({
      id: Locations.directoryHash(repo),
      directory: repo
    })

    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    const root = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    const location = yield* resolveIn(repo, { directory: "packages/app" })
    expect(location).toEqual({ directory: path.join(repo, "packages", "app"), project: { id: root, directory: repo } })
    expect((yield* resolveIn(path.join(repo, "packages"))).project).toEqual({ id: root, directory: repo })
  })
)

it.scoped("resolution is cached per directory for the life of the layer", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const locations = yield* Effect.provide(
      Locations.Service,
      Locations.layer({ directory: dir }).pipe(Layer.provide(NodeContext.layer))
    )
    const before = yield* locations.resolve()
    git(dir, "init", "-q")
    git(dir, "commit", "-q", "--allow-empty", "-m", "root")
    expect(yield* locations.resolve()).toEqual(before)
  })
)

it.scoped("without a git binary every directory falls back to its hash", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    git(dir, "init", "-q")
    git(dir, "commit", "-q", "--allow-empty", "-m", "root")
    const noGit = CommandExecutor.makeExecutor((command) =>
      Effect.fail(
        new SystemError({ reason: "NotFound", module: "Command", method: "spawn", pathOrDescriptor: String(command) })
      )
    )
    const location = yield* Effect.flatMap(Locations.Service, (locations) => locations.resolve()).pipe(
      Effect.provide(
        Locations.layer({ directory: dir }).pipe(
          Layer.provide(Layer.succeed(CommandExecutor.CommandExecutor, noGit)),
          Layer.provide(NodeContext.layer)
        )
      )
    )
    expect(location.project).toEqual({ id: Locations.directoryHash(dir), directory: dir })
  })
)

it.scoped("a missing directory or a file is an InvalidRequestError on location.directory", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    fs.writeFileSync(path.join(dir, "file.txt"), "x")
    expect(yield* Effect.exit(resolveIn(dir, { directory: "missing" }))).toEqual(invalid("location.directory"))
    expect(yield* Effect.exit(resolveIn(dir, { directory: path.join(dir, "file.txt") }))).toEqual(
      invalid("location.directory")
    )
  })
)

it.scoped("a wrk workspace is carried through; anything else is an InvalidRequestError on location.workspace", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    expect((yield* resolveIn(dir, { workspace: "wrk_abc" })).workspaceID).toBe("wrk_abc")
    expect(yield* Effect.exit(resolveIn(dir, { workspace: "ses_abc" }))).toEqual(invalid("location.workspace"))
    expect(yield* Effect.exit(resolveIn(dir, { workspace: "" }))).toEqual(invalid("location.workspace"))
  })
)
