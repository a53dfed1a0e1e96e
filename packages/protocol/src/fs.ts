export * as FileSystemGroup from "./fs.js"

import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Errors, FileSystemEntry, Location } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** The `location` deepObject members, as {@link LocationQuery} reads them. */
const locationKeys = {
  "location[directory]": Schema.optional(Schema.String),
  "location[workspace]": Schema.optional(Schema.String)
}
const LocationRef = Schema.Struct({
  directory: Schema.optional(Schema.String),
  workspace: Schema.optional(Schema.String)
})

/** `location[directory]` / `location[workspace]` folded into `location` (absent when neither is given). */
const foldLocation = (flat: {
  readonly "location[directory]"?: string | undefined
  readonly "location[workspace]"?: string | undefined
}) => {
  const location = {
    ...(flat["location[directory]"] !== undefined ? { directory: flat["location[directory]"] } : {}),
    ...(flat["location[workspace]"] !== undefined ? { workspace: flat["location[workspace]"] } : {})
  }
  return Object.keys(location).length === 0 ? {} : { location }
}
const unfoldLocation = (
  location: { readonly directory?: string | undefined; readonly workspace?: string | undefined } | undefined
) => ({
  ...(location?.directory !== undefined ? { "location[directory]": location.directory } : {}),
  ...(location?.workspace !== undefined ? { "location[workspace]": location.workspace } : {})
})

/** `GET /api/fs/list`'s query: the Location and the directory to list (relative to it; default: itself). */
export const ListQuery = Schema.transform(
  Schema.Struct({ ...locationKeys, path: Schema.optional(Schema.String) }),
  Schema.Struct({ location: Schema.optional(LocationRef), path: Schema.optional(Schema.String) }),
  {
    strict: true,
    decode: ({ path, ...flat }) => ({ ...foldLocation(flat), ...(path === undefined ? {} : { path }) }),
    encode: ({ location, path }) => ({ ...unfoldLocation(location), ...(path === undefined ? {} : { path }) })
  }
)

/** `find`'s `limit`: a positive integer, in decimal on the wire. */
export const FindLimit = Schema.NumberFromString.pipe(Schema.int(), Schema.positive())

/** What `find` looks for: files, directories, or (absent) both. */
export const FindType = Schema.Literal("file", "directory")

/** `GET /api/fs/find`'s query: the Location, the query text, the entry type and the limit. */
export const FindQuery = Schema.transform(
  Schema.Struct({
    ...locationKeys,
    query: Schema.String,
    type: Schema.optional(FindType),
    limit: Schema.optional(Schema.String)
  }),
  Schema.Struct({
    location: Schema.optional(LocationRef),
    query: Schema.String,
    type: Schema.optional(FindType),
    limit: Schema.optional(FindLimit)
  }),
  {
    strict: true,
    decode: ({ query, type, limit, ...flat }) => ({
      ...foldLocation(flat),
      query,
      ...(type === undefined ? {} : { type }),
      ...(limit === undefined ? {} : { limit })
    }),
    encode: ({ location, query, type, limit }) => ({
      ...unfoldLocation(location),
      query,
      ...(type === undefined ? {} : { type }),
      ...(limit === undefined ? {} : { limit })
    })
  }
)

/** `{location, data: FileSystemEntry[]}` */
export const EntriesResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(FileSystemEntry.Entry)
})
export interface EntriesResponse extends Schema.Schema.Type<typeof EntriesResponse> {}

/**
 * `GET /api/fs/read/*`: the bytes of one file of the Location, the path after `/api/fs/read/` naming
 * it relative to the Location directory (percent-encoded as a URL path). The `Content-Type` says what
 * the bytes are: a text file's media type (`text/plain` when its name says nothing textual) with
 * `charset=utf-8`; binary content (a binary format, a NUL byte, invalid UTF-8) as the media type its
 * name gives, else `application/octet-stream`.
 *
 * Failures: 400 `InvalidRequestError` with `field: "path"` and `kind` `outside_location` (`..`, an
 * absolute path elsewhere, a symlink whose target is outside), `not_a_file` (a directory, a FIFO) or
 * `file_too_large` (over the read limit, 10 MiB); 404 `PathNotFoundError` when nothing is there.
 */
export const read = HttpApiEndpoint.get("read", "/api/fs/read/*")
  .setUrlParams(LocationQuery)
  .addSuccess(HttpApiSchema.Uint8Array())
  .addError(Errors.PathNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.fs.read")
  .annotate(OpenApi.Summary, "Read a file")
  .annotate(
    OpenApi.Description,
    "Serves one file of the requested Location as bytes; the path after /api/fs/read/ names it relative to the Location directory, and the Content-Type gives its media type and, for text, its charset. Paths leading outside the Location (including through symlinks), directories and files over the size limit are refused with 400; a missing path is 404."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/**
 * `GET /api/fs/list`: the direct children of a directory of the Location (`path`, default: the
 * Location directory itself), directories first, each group in path order. `.git` and what the
 * `.gitignore` files exclude are left out, as are symlinks leading outside the Location.
 *
 * Failures: 400 `InvalidRequestError` (`field: "path"`, `kind` `outside_location` or
 * `not_a_directory`); 404 `PathNotFoundError`.
 */
export const list = HttpApiEndpoint.get("list", "/api/fs/list")
  .setUrlParams(ListQuery)
  .addSuccess(EntriesResponse)
  .addError(Errors.PathNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.fs.list")
  .annotate(OpenApi.Summary, "List a directory")
  .annotate(
    OpenApi.Description,
    "The direct children of one directory of the requested Location (path, relative to it; default: the Location directory), directories first. Entries excluded by .gitignore files, .git and symlinks leading outside the Location are left out."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/**
 * `GET /api/fs/find`: files and directories below the Location whose paths match `query` (terms
 * separated by spaces, each matched case-insensitively as part of the name or path, or as a
 * subsequence), best ranked first, at most `limit` of them (default 100, at most 1000). `type` keeps
 * only files or only directories. Ignored paths and `.git` are not searched.
 */
export const find = HttpApiEndpoint.get("find", "/api/fs/find")
  .setUrlParams(FindQuery)
  .addSuccess(EntriesResponse)
  .annotate(OpenApi.Identifier, "v2.fs.find")
  .annotate(OpenApi.Summary, "Find files")
  .annotate(
    OpenApi.Description,
    "Files and directories below the requested Location whose paths match the query, best ranked first: limit bounds the answer (default 100, at most 1000) and type keeps only files or only directories. Paths excluded by .gitignore files are not searched."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** The `filesystem` group; clients call it `file` (`client.file.read(…)`), as upstream's client does. */
export const group = HttpApiGroup.make("file")
  .add(read)
  .add(list)
  .add(find)
  .annotate(OpenApi.Title, "filesystem")
  .annotate(ClientProjection.Namespace, "files")
