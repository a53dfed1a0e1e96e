import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServer, tempDir } from "./harness.js"

interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly bytes: Uint8Array
  readonly json: any
}

const get = (url: string) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url)
    const bytes = new Uint8Array(await response.arrayBuffer())
    const contentType = response.headers.get("content-type")
    const json = contentType?.startsWith("application/json") ? JSON.parse(new TextDecoder().decode(bytes)) : undefined
    return { status: response.status, contentType, bytes, json }
  })

/** A GET with the request target sent exactly as given (no URL normalization of `..`). */
const rawGet = (base: string, target: string) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { hostname, port } = new URL(base)
        const request = http.request({ hostname, port, path: target, method: "GET" }, (response) => {
          let body = ""
          response.setEncoding("utf8")
          response.on("data", (chunk) => {
            body += chunk
          })
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
        })
        request.on("error", reject)
        request.end()
      })
  )

const text = (answer: Answer) => new TextDecoder().decode(answer.bytes)

/** A project laid out in the server's instance directory, with a sibling folder outside it. */
const layout = (directory: string) => {
  const outside = tempDir("outside")
  fs.writeFileSync(path.join(outside, "secret.txt"), "secret")
  const files: Record<string, string | Uint8Array> = {
    ".gitignore": "dist/\n*.log\n",
    "src/app.ts": "export const app = 1\n",
    "src/util/strings.ts": "export const s = ''\n",
    "docs/guide.md": "# Guide\n",
    "dist/app.js": "built",
    "debug.log": "log",
    "image.png": Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]),
    "with space/é.txt": "accented\n"
  }
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(directory, name)), { recursive: true })
    fs.writeFileSync(path.join(directory, name), content)
  }
  fs.symlinkSync(path.join(outside, "secret.txt"), path.join(directory, "leak.txt"))
  fs.symlinkSync(outside, path.join(directory, "leak-dir"))
  return { outside }
}

describe("GET /api/fs/read/*", () => {
  it.scopedLive("serves a file's bytes with its media type; text gets charset=utf-8, binary its own type", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      layout(server.directory)
      const app = yield* get(`${server.url}/api/fs/read/src/app.ts`)
      expect(app.status).toBe(200)
      expect(app.contentType).toBe("text/plain; charset=utf-8")
      expect(text(app)).toBe("export const app = 1\n")
      const guide = yield* get(`${server.url}/api/fs/read/docs/guide.md`)
      expect(guide.contentType).toBe("text/markdown; charset=utf-8")
      const image = yield* get(`${server.url}/api/fs/read/image.png`)
      expect(image.status).toBe(200)
      expect(image.contentType).toBe("image/png")
      expect([...image.bytes]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])
      // Percent-encoded names (a space, a non-ASCII letter, an encoded slash) are decoded.
      const accented = yield* get(`${server.url}/api/fs/read/with%20space/%C3%A9.txt`)
      expect(text(accented)).toBe("accented\n")
      const encodedSlash = yield* get(`${server.url}/api/fs/read/src%2Futil%2Fstrings.ts`)
      expect(text(encodedSlash)).toBe("export const s = ''\n")
      // read serves ignored files too: .gitignore governs listings, not access.
      const ignored = yield* get(`${server.url}/api/fs/read/debug.log`)
      expect(text(ignored)).toBe("log")
    })
  )

  it.scopedLive("reads relative to the requested Location", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const other = fs.realpathSync(tempDir("other"))
      fs.writeFileSync(path.join(other, "here.txt"), "other location")
      const answer = yield* get(`${server.url}/api/fs/read/here.txt?location[directory]=${encodeURIComponent(other)}`)
      expect(answer.status).toBe(200)
      expect(text(answer)).toBe("other location")
      const badLocation = yield* get(`${server.url}/api/fs/read/here.txt?location[directory]=/no/such/dir`)
      expect(badLocation.status).toBe(400)
      expect(badLocation.json).toMatchObject({ _tag: "InvalidRequestError", kind: "location" })
    })
  )

  it.scopedLive("a missing path is a 404 PathNotFoundError", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      layout(server.directory)
      const missing = yield* get(`${server.url}/api/fs/read/src/nope.ts`)
      expect(missing.status).toBe(404)
      expect(missing.json).toEqual({
        _tag: "PathNotFoundError",
        path: "src/nope.ts",
        message: "No such file or directory: src/nope.ts"
      })
    })
  )

  it.scopedLive("a directory, an empty path and paths leading outside are 400 InvalidRequestErrors", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      layout(server.directory)
      const directory = yield* get(`${server.url}/api/fs/read/src`)
      expect(directory.status).toBe(400)
      expect(directory.json).toMatchObject({ _tag: "InvalidRequestError", kind: "not_a_file", field: "path" })
      const dot = yield* get(`${server.url}/api/fs/read/.%2F`)
      expect(dot.status).toBe(400)
      expect(dot.json).toMatchObject({ _tag: "InvalidRequestError", kind: "not_a_file" })
      // No path at all names no route (the router's wildcard needs a segment): a tagged JSON 404.
      const empty = yield* get(`${server.url}/api/fs/read/`)
      expect(empty.status).toBe(404)
      expect(empty.json._tag).toBe("RouteNotFoundError")
      for (const target of ["leak.txt", "leak-dir/secret.txt", "..%2Foutside%2Fsecret.txt", "%2Fetc%2Fpasswd"]) {
        const answer = yield* get(`${server.url}/api/fs/read/${target}`)
        expect(answer.status, target).toBe(400)
        expect(answer.json, target).toMatchObject({ _tag: "InvalidRequestError", kind: "outside_location" })
        expect(text(answer)).not.toContain('secret"')
      }
      // Dot segments sent verbatim (no client-side normalization) never reach outside either.
      const raw = yield* rawGet(server.url, "/api/fs/read/../../../../etc/passwd")
      expect([400, 404]).toContain(raw.status)
      expect(raw.body).not.toContain("root:")
      const rawInside = yield* rawGet(server.url, "/api/fs/read/src/../../etc/passwd")
      expect([400, 404]).toContain(rawInside.status)
      expect(rawInside.body).not.toContain("root:")
    })
  )

  it.scopedLive("a file over the 10 MiB read limit is a 400 InvalidRequestError (file_too_large)", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      const big = path.join(server.directory, "big.bin")
      fs.writeFileSync(big, "")
      fs.truncateSync(big, 10 * 1024 * 1024 + 1)
      const answer = yield* get(`${server.url}/api/fs/read/big.bin`)
      expect(answer.status).toBe(400)
      expect(answer.json).toMatchObject({ _tag: "InvalidRequestError", kind: "file_too_large", field: "path" })
      expect(answer.json.message).toContain("10485761 bytes")
    })
  )
})

describe("GET /api/fs/list", () => {
  it.scopedLive(
    "lists a directory's children (directories first), leaving out ignored entries and outside symlinks",
    () =>
      Effect.gen(function* () {
        const server = yield* startServer()
        layout(server.directory)
        const root = yield* get(`${server.url}/api/fs/list`)
        expect(root.status).toBe(200)
        expect(root.json.location.directory).toBe(fs.realpathSync(server.directory))
        expect(root.json.data).toEqual([
          { path: "docs", type: "directory" },
          { path: "src", type: "directory" },
          { path: "with space", type: "directory" },
          { path: ".gitignore", type: "file" },
          { path: "image.png", type: "file" }
        ])
        const src = yield* get(`${server.url}/api/fs/list?path=src`)
        expect(src.json.data).toEqual([
          { path: "src/util", type: "directory" },
          { path: "src/app.ts", type: "file" }
        ])
      })
  )

  it.scopedLive("a file is 400 not_a_directory, a missing path 404, outside paths 400 outside_location", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      layout(server.directory)
      const file = yield* get(`${server.url}/api/fs/list?path=src/app.ts`)
      expect(file.status).toBe(400)
      expect(file.json).toMatchObject({ _tag: "InvalidRequestError", kind: "not_a_directory", field: "path" })
      const missing = yield* get(`${server.url}/api/fs/list?path=nowhere`)
      expect(missing.status).toBe(404)
      expect(missing.json).toMatchObject({ _tag: "PathNotFoundError", path: "nowhere" })
      for (const target of ["..", "leak-dir", "/etc"]) {
        const answer = yield* get(`${server.url}/api/fs/list?path=${encodeURIComponent(target)}`)
        expect(answer.status, target).toBe(400)
        expect(answer.json, target).toMatchObject({ _tag: "InvalidRequestError", kind: "outside_location" })
      }
    })
  )
})

describe("GET /api/fs/find", () => {
  it.scopedLive("finds ranked entries, filtered by type and bounded by limit, skipping ignored paths", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      layout(server.directory)
      const app = yield* get(`${server.url}/api/fs/find?query=app`)
      expect(app.status).toBe(200)
      expect(app.json.location.directory).toBe(fs.realpathSync(server.directory))
      // dist/app.js is ignored; leak.txt's target is outside.
      expect(app.json.data).toEqual([{ path: "src/app.ts", type: "file" }])
      const directories = yield* get(`${server.url}/api/fs/find?query=u&type=directory`)
      expect(directories.json.data).toEqual([{ path: "src/util", type: "directory" }])
      const limited = yield* get(`${server.url}/api/fs/find?query=&limit=2`)
      expect(limited.json.data).toHaveLength(2)
      const all = yield* get(`${server.url}/api/fs/find?query=s`)
      expect(all.json.data.map((entry: { path: string }) => entry.path)).not.toContain("dist")
    })
  )

  it.scopedLive("a missing query, a bad type or a bad limit is a 400 InvalidRequestError", () =>
    Effect.gen(function* () {
      const server = yield* startServer()
      for (const query of ["", "?query=x&type=link", "?query=x&limit=0", "?query=x&limit=ten", "?query=x&limit=1.5"]) {
        const answer = yield* get(`${server.url}/api/fs/find${query}`)
        expect(answer.status, query).toBe(400)
        expect(answer.json._tag, query).toBe("InvalidRequestError")
      }
    })
  )
})

describe("the fs group behind Basic auth", () => {
  it.scopedLive("every fs operation answers 401 UnauthorizedError without credentials and serves with them", () =>
    Effect.gen(function* () {
      const server = yield* startServer({ OPENCODE_SERVER_PASSWORD: "s3cret" })
      fs.writeFileSync(path.join(server.directory, "a.txt"), "a")
      for (const route of ["/api/fs/read/a.txt", "/api/fs/list", "/api/fs/find?query=a"]) {
        const denied = yield* get(`${server.url}${route}`)
        expect(denied.status, route).toBe(401)
        expect(denied.json._tag, route).toBe("UnauthorizedError")
        const allowed = yield* Effect.promise(() =>
          fetch(`${server.url}${route}`, {
            headers: { authorization: `Basic ${Buffer.from("opencode:s3cret").toString("base64")}` }
          })
        )
        expect(allowed.status, route).toBe(200)
      }
    })
  )
})
