export * as ModelsDev from "./models-dev.js"

/**
 * The model database format: models.dev's `api.json`, `{[providerID]: {id, name, npm?, api?, env,
 * doc?, models: {[modelID]: model}}}`. A model entry has the keys of a config model
 * (`provider.<id>.models.<id>`: name, family, attachment, reasoning, temperature, tool_call,
 * release_date, modalities, cost, limit, status, …), which is what lets the Catalog merge the user's
 * `provider` config over it key by key.
 *
 * Decoding is lenient where the database grows and strict where it matters: unknown keys are dropped,
 * a model or provider entry that does not decode is left out (so one odd entry does not cost the whole
 * refresh), but a document that is not an object of providers, or in which no provider decodes, is
 * invalid.
 */

import { Either, ParseResult, Schema } from "effect"
import * as ConfigInfo from "./config-info.js"
import { ModelsSnapshot } from "./models-snapshot.js"

/** One provider of the database, without its models. */
export const ProviderHeader = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** The AI SDK package upstream would load: here it only selects the wire protocol. */
  npm: Schema.optionalWith(Schema.String, { exact: true }),
  /** The base URL, when the package does not imply one. */
  api: Schema.optionalWith(Schema.String, { exact: true }),
  /** Environment variables that may hold the credential, in order. */
  env: Schema.Array(Schema.String),
  doc: Schema.optionalWith(Schema.String, { exact: true })
})
export interface ProviderHeader extends Schema.Schema.Type<typeof ProviderHeader> {}

/** One provider of the database with its models (in the config's model shape). */
export interface Provider extends ProviderHeader {
  readonly models: Readonly<Record<string, ConfigInfo.Model>>
}

/** A whole database: providers by ID, in document order. */
export type Database = Readonly<Record<string, Provider>>

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const decodeHeader = Schema.decodeUnknownEither(ProviderHeader)
const decodeModel = Schema.decodeUnknownEither(ConfigInfo.Model)

/** What {@link decode} kept and left out. */
export interface Decoded {
  readonly database: Database
  /** `provider` or `provider/model` of each entry that did not decode, with the reason. */
  readonly skipped: ReadonlyArray<string>
}

/**
 * Decodes a parsed `api.json` document (see the module doc for what is left out). Fails with the
 * reason when the document is not an object of providers or none of its providers decodes.
 */
export const decode = (document: unknown): Either.Either<Decoded, string> => {
  if (!isRecord(document)) return Either.left("expected an object of providers")
  const database: Record<string, Provider> = {}
  const skipped: Array<string> = []
  const reason = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error).split("\n")[0]
  for (const [id, value] of Object.entries(document)) {
    const header = decodeHeader(value)
    if (Either.isLeft(header) || !isRecord(value) || !isRecord(value.models)) {
      skipped.push(`${id}: ${Either.isLeft(header) ? reason(header.left) : "no models"}`)
      continue
    }
    const models: Record<string, ConfigInfo.Model> = {}
    for (const [modelID, model] of Object.entries(value.models)) {
      const decoded = decodeModel(model)
      if (Either.isLeft(decoded)) skipped.push(`${id}/${modelID}: ${reason(decoded.left)}`)
      else models[modelID] = decoded.right
    }
    database[id] = { ...header.right, models }
  }
  if (Object.keys(database).length === 0) {
    return Either.left(skipped.length === 0 ? "no providers" : `no provider decodes (first: ${skipped[0] ?? "none"})`)
  }
  return Either.right({ database, skipped })
}

/** Parses and decodes the text of an `api.json` document; fails with the reason. */
export const parse = (text: string): Either.Either<Decoded, string> => {
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch (error) {
    return Either.left(`not JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
  return decode(document)
}

/**
 * The database bundled with the runtime (`models-snapshot.json`, see {@link ModelsSnapshot} for its
 * source and age). The snapshot is generated in decoded form (only the keys the schemas keep, no
 * transformations), so it is used as it is: decoding it would rebuild an equal copy, a sizeable share
 * of a server's start-up. A test checks that {@link decode} keeps every entry of it and returns a value
 * deep-equal to the document, so a snapshot that would not decode to itself is caught there.
 */
export const snapshot = (): Database => ModelsSnapshot.document as Database

/** No providers: a catalog of the user's config alone. */
export const empty: Database = {}
