import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient, isInvalidRequestError, isPathNotFoundError } from "@opencode-ai/client"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect } from "effect"

const temp = (prefix: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`)))

/** An embedded host over a project with a few files, a `.gitignore` and a symlink leading outside it. */
const host = Effect.gen(function* () {
  const directory = temp("files")
  const outside = temp("outside")
  fs.writeFileSync(path.join(outside, "secret.txt"), "secret")
  for (const [name, content] of Object.entries({
    ".gitignore": "build/\n",
    "src/main.ts": "console.log('main')\n",
    "src/nested dir/notes.md": "# Notes\n",
    "build/out.js": "built",
    "logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])
  })) {
    fs.mkdirSync(path.dirname(path.join(directory, name)), { recursive: true })
    fs.writeFileSync(path.join(directory, name), content)
  }
  fs.symlinkSync(path.join(outside, "secret.txt"), path.join(directory, "leak.txt"))
  const opencode = yield* OpenCode.embedded({ databaseFile: path.join(temp("db"), "opencode.db"), directory })
  return { opencode, directory }
})

describe("Embedded OpenCode: the Location's files", () => {
  it.scopedLive("reads, lists and finds through the Effect client, with tagged failures", () =>
    Effect.gen(function* () {
      const { opencode, directory } = yield* host
      const bytes = yield* opencode.files.read({ path: "src/nested dir/notes.md" })
      expect(new TextDecoder().decode(bytes)).toBe("# Notes\n")
      const logo = yield* opencode.files.read({ path: "logo.png" })
      expect([...logo]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])

      const listed = yield* opencode.files.list()
      expect(listed.location.directory).toBe(directory)
      expect(listed.data).toEqual([
        { path: "src", type: "directory" },
        { path: ".gitignore", type: "file" },
        { path: "logo.png", type: "file" }
      ])
      const nested = yield* opencode.files.list({ path: "src" })
      expect(nested.data).toEqual([
        { path: "src/nested dir", type: "directory" },
        { path: "src/main.ts", type: "file" }
      ])
      const found = yield* opencode.files.find({ query: "main", limit: 5 })
      expect(found.data).toEqual([{ path: "src/main.ts", type: "file" }])

      const missing = yield* Effect.flip(opencode.files.read({ path: "src/absent.ts" }))
      expect(missing._tag).toBe("PathNotFoundError")
      const outside = yield* Effect.flip(opencode.files.read({ path: "leak.txt" }))
      expect(outside).toMatchObject({ _tag: "InvalidRequestError", kind: "outside_location" })
      const climb = yield* Effect.flip(opencode.files.read({ path: "../secret.txt" }))
      expect(climb).toMatchObject({ _tag: "InvalidRequestError", kind: "outside_location" })
      const parent = yield* Effect.flip(opencode.files.read({ path: ".." }))
      expect(parent).toMatchObject({ _tag: "InvalidRequestError", kind: "outside_location" })
      const itself = yield* Effect.flip(opencode.files.read({ path: "" }))
      expect(itself).toMatchObject({ _tag: "InvalidRequestError", kind: "not_a_file" })
      const notADirectory = yield* Effect.flip(opencode.files.list({ path: "src/main.ts" }))
      expect(notADirectory).toMatchObject({ _tag: "InvalidRequestError", kind: "not_a_directory" })
    })
  )

  it.scopedLive("reads through the Promise client over the in-memory fetch: a Blob typed by its media type", () =>
    Effect.gen(function* () {
      const { opencode } = yield* host
      const client = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: opencode.fetch })
      const blob = yield* Effect.promise(() => client.files.read({ path: "src/nested dir/notes.md" }))
      // Blob normalizes the media type's parameter spacing.
      expect(blob.type.replace(/\s/g, "")).toBe("text/markdown;charset=utf-8")
      expect(yield* Effect.promise(() => blob.text())).toBe("# Notes\n")
      const listed = yield* Effect.promise(() => client.files.list({ path: "src" }))
      expect(listed.data.map((entry) => entry.path)).toEqual(["src/nested dir", "src/main.ts"])
      const failure = yield* Effect.promise(() =>
        client.files.read({ path: "missing.txt" }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      expect(isPathNotFoundError(failure)).toBe(true)
      const directory = yield* Effect.promise(() =>
        client.files.read({ path: "src" }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      expect(isInvalidRequestError(directory)).toBe(true)
    })
  )
})
