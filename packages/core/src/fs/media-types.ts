export * as MediaTypes from "./media-types.js"

import { Mime } from "mime"
import otherTypes from "mime/types/other.js"
import standardTypes from "mime/types/standard.js"

let database: Mime | undefined

/**
 * The media type the `mime` database (its standard and other types) gives a file name by its
 * extension, or null when it gives none. The database is built on the first lookup, once per process
 * and shared by its readers (file routes, the read tool): building one defines some two thousand
 * types, CPU and memory a server need not spend before something asks.
 */
export const byName = (file: string): string | null => {
  if (database === undefined) database = new Mime(standardTypes, otherTypes)
  return database.getType(file)
}
