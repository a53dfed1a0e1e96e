export * as FileSystemEntry from "./file-system-entry.js"

import { Schema } from "effect"

/**
 * A file or directory inside a Location, as `GET /api/fs/list` and `GET /api/fs/find` report it:
 * `path` is relative to the Location directory, `/`-separated (`src/index.ts`).
 */
export const Entry = Schema.Struct({
  path: Schema.String,
  type: Schema.Literal("file", "directory")
}).annotations({ identifier: "FileSystemEntry" })
export interface Entry extends Schema.Schema.Type<typeof Entry> {}
