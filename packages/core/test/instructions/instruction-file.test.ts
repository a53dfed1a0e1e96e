import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { describe, expect } from "vitest"
import { InstructionFile } from "../../src/instructions/instruction-file.js"
import { tempDir } from "../fixture.js"
import { unreadable } from "./world.js"

// Real files in a temporary directory: what a Safe Step Boundary finds at an instruction path.
describe("InstructionFile.read", () => {
  it.scoped("a regular file is its text; a symbolic link to one reads through", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const file = path.join(dir, "AGENTS.md")
      fs.writeFileSync(file, "Use tabs.\n")
      fs.symlinkSync(file, path.join(dir, "linked.md"))
      expect(yield* InstructionFile.read(file)).toBe("Use tabs.\n")
      expect(yield* InstructionFile.read(path.join(dir, "linked.md"))).toBe("Use tabs.\n")
    })
  )

  it.scoped("nothing there, a directory, a path through a file and a dangling link are all no file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      fs.mkdirSync(path.join(dir, "AGENTS.md"))
      fs.writeFileSync(path.join(dir, "plain"), "x")
      fs.symlinkSync(path.join(dir, "gone.md"), path.join(dir, "dangling.md"))
      for (const candidate of ["missing.md", "AGENTS.md", "plain/AGENTS.md", "dangling.md"]) {
        expect(yield* InstructionFile.read(path.join(dir, candidate))).toBeUndefined()
      }
    })
  )

  it.scoped("something there that cannot be read fails with the read's error", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const socket = path.join(dir, "AGENTS.md")
      yield* unreadable(socket)
      const result = yield* Effect.either(InstructionFile.read(socket))
      expect(Either.isLeft(result)).toBe(true)
      expect(Either.flip(result)).toEqual(Either.right(expect.objectContaining({ code: "ENXIO" })))
    })
  )
})
