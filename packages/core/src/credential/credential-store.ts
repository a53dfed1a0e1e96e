export * as CredentialStore from "./credential-store.js"

/**
 * The Credential Store: the provider credentials a user connected, kept in `auth.json` in the data
 * directory, in upstream's format: one entry per provider ID,
 * `{"<providerID>": {"type": "api", "key": …} | {"type": "oauth", "refresh": …, "access": …, "expires": <ms>}
 * | {"type": "wellknown", "key": …, "token": …}}`. This runtime adds two optional fields to an entry:
 * `label` (what the user called the credential) and, on an OAuth entry, `method` (the ID of the OAuth
 * method that issued it, whose token endpoint refreshes it). A file written by upstream reads as is.
 *
 * - One credential per provider: the Credential ID is the provider ID it is stored under.
 * - The file is private: written with mode 0600 (its directory created 0700), and a file found with a
 *   looser mode is narrowed to 0600 when the store opens it.
 * - Every write is atomic: a temporary file in the same directory, flushed, then renamed over
 *   `auth.json`; a reader sees the old file or the new one, never part of one.
 * - Writes are serialized (one at a time), each re-reading the file first, so an entry another process
 *   wrote in the meantime is kept.
 * - Secrets are never logged and never leave through the API: what the store reports outside the
 *   runtime is {@link Connection} (ID, type, label).
 * - An unreadable or invalid file fails the layer (the runtime does not start over credentials it
 *   cannot read, and does not overwrite them); entries of an unknown type are kept but ignored.
 */

import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { Context, Data, Effect, Layer, Schema, type Stream, SubscriptionRef } from "effect"

/** An API key (`type: "api"`). */
export const ApiEntry = Schema.Struct({
  type: Schema.Literal("api"),
  key: Schema.String,
  label: Schema.optionalWith(Schema.String, { exact: true })
})
/** OAuth tokens (`type: "oauth"`): `expires` is the access token's expiry in epoch milliseconds. */
export const OAuthEntry = Schema.Struct({
  type: Schema.Literal("oauth"),
  refresh: Schema.String,
  access: Schema.String,
  expires: Schema.Number,
  label: Schema.optionalWith(Schema.String, { exact: true }),
  method: Schema.optionalWith(Schema.String, { exact: true })
})
/** A well-known credential (`type: "wellknown"`): `token` is what requests carry. */
export const WellKnownEntry = Schema.Struct({
  type: Schema.Literal("wellknown"),
  key: Schema.String,
  token: Schema.String,
  label: Schema.optionalWith(Schema.String, { exact: true })
})
export const Entry = Schema.Union(ApiEntry, OAuthEntry, WellKnownEntry)
export type Entry = typeof Entry.Type
export type OAuthEntry = typeof OAuthEntry.Type

/** The file's content: entries by provider ID. */
export type Entries = Readonly<Record<string, Entry>>

/** What may be said about a credential outside the runtime: never the secret. */
export interface Connection {
  /** The Credential ID (the provider ID it is stored under). */
  readonly id: string
  readonly type: Entry["type"]
  readonly label: string
}

/** The label of an entry: its own, else one naming its kind. */
export const labelOf = (entry: Entry): string =>
  entry.label ?? (entry.type === "api" ? "API key" : entry.type === "oauth" ? "OAuth" : "Well-known credential")

/** The value requests authenticate with: the key, the access token, or the well-known token. */
export const secretOf = (entry: Entry): string =>
  entry.type === "api" ? entry.key : entry.type === "oauth" ? entry.access : entry.token

/** `auth.json` could not be read, parsed or written. The message names the file, never its content. */
export class CredentialStoreError extends Data.TaggedError("CredentialStoreError")<{
  readonly file: string
  readonly message: string
}> {}

export interface Interface {
  /** The file: `<dataDir>/auth.json`. */
  readonly file: string
  /** Every usable entry, by provider ID. */
  readonly entries: Effect.Effect<Entries>
  readonly get: (providerID: string) => Effect.Effect<Entry | undefined>
  /** Stores `entry` for `providerID`, replacing any credential it had. */
  readonly set: (providerID: string, entry: Entry) => Effect.Effect<void, CredentialStoreError>
  /**
   * Applies `change` to the entry of `providerID` (under the write lock) and stores the result;
   * false (nothing written) when there is no entry.
   */
  readonly modify: (providerID: string, change: (entry: Entry) => Entry) => Effect.Effect<boolean, CredentialStoreError>
  /** Deletes the entry of `providerID`; false when there was none. */
  readonly remove: (providerID: string) => Effect.Effect<boolean, CredentialStoreError>
  /** The entries now and after every change (the current value first). */
  readonly changes: Stream.Stream<Entries>
}

/** The Credential Store; `yield* CredentialStore.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/CredentialStore")<Service, Interface>() {}

/** The credentials file of a data directory. */
export const fileOf = (dataDir: string): string => nodePath.join(dataDir, "auth.json")

const decodeEntry = Schema.decodeUnknownOption(Entry)

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT"

/** Reads the file (narrowing a loose mode to 0600): its usable entries and the raw object. */
const readFile = (file: string) =>
  Effect.tryPromise({
    try: async () => {
      let text: string
      try {
        const stat = await fs.stat(file)
        if ((stat.mode & 0o077) !== 0) await fs.chmod(file, 0o600)
        text = await fs.readFile(file, "utf8")
      } catch (error) {
        if (isMissing(error)) return { raw: {} as Record<string, unknown>, entries: {} as Record<string, Entry> }
        throw error
      }
      const parsed: unknown = text.trim() === "" ? {} : JSON.parse(text)
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object")
      const raw = parsed as Record<string, unknown>
      const entries: Record<string, Entry> = {}
      for (const [id, value] of Object.entries(raw)) {
        const entry = decodeEntry(value)
        if (entry._tag === "Some") entries[id] = entry.value
      }
      return { raw, entries }
    },
    catch: (error) =>
      new CredentialStoreError({
        file,
        message: `${file} cannot be read: ${error instanceof SyntaxError ? "not valid JSON" : error instanceof Error ? error.message : String(error)}`
      })
  })

/** Writes `raw` atomically with mode 0600 (temporary file, flush, rename). */
const writeFile = (file: string, raw: Readonly<Record<string, unknown>>) =>
  Effect.tryPromise({
    try: async () => {
      await fs.mkdir(nodePath.dirname(file), { recursive: true, mode: 0o700 })
      const temp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
      const handle = await fs.open(temp, "wx", 0o600)
      try {
        await handle.writeFile(`${JSON.stringify(raw, null, 2)}\n`, "utf8")
        await handle.sync()
      } finally {
        await handle.close()
      }
      try {
        await fs.rename(temp, file)
      } catch (error) {
        await fs.rm(temp, { force: true })
        throw error
      }
      // rename keeps the temporary file's mode; this only matters on a filesystem that ignores it.
      await fs.chmod(file, 0o600)
    },
    catch: (error) =>
      new CredentialStoreError({
        file,
        message: `${file} cannot be written: ${error instanceof Error ? error.message : String(error)}`
      })
  })

/**
 * The store over `<dataDir>/auth.json` (see the module doc). Reads the file once when built (failing
 * with CredentialStoreError when it exists but cannot be read or is not a JSON object).
 */
export const layer = (options: { readonly dataDir: string }): Layer.Layer<Service, CredentialStoreError> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const file = fileOf(options.dataDir)
      const initial = yield* readFile(file)
      const state = yield* SubscriptionRef.make<Entries>(initial.entries)
      const lock = yield* Effect.makeSemaphore(1)
      /** Re-reads the file, applies `change` to its raw object, writes it, and publishes the entries. */
      const update = <A>(
        change: (raw: Record<string, unknown>) => { readonly raw?: Record<string, unknown>; readonly result: A }
      ) =>
        lock.withPermits(1)(
          Effect.gen(function* () {
            const current = yield* readFile(file)
            const { raw, result } = change({ ...current.raw })
            if (raw === undefined) return result
            yield* writeFile(file, raw)
            const entries: Record<string, Entry> = {}
            for (const [id, value] of Object.entries(raw)) {
              const entry = decodeEntry(value)
              if (entry._tag === "Some") entries[id] = entry.value
            }
            yield* SubscriptionRef.set(state, entries)
            return result
          })
        )
      return {
        file,
        entries: SubscriptionRef.get(state),
        get: (providerID) => Effect.map(SubscriptionRef.get(state), (entries) => entries[providerID]),
        set: (providerID, entry) =>
          update((raw) => ({ raw: { ...raw, [providerID]: Schema.encodeSync(Entry)(entry) }, result: undefined })),
        modify: (providerID, change) =>
          update((raw) => {
            const existing = decodeEntry(raw[providerID])
            if (existing._tag === "None") return { result: false }
            return { raw: { ...raw, [providerID]: Schema.encodeSync(Entry)(change(existing.value)) }, result: true }
          }),
        remove: (providerID) =>
          update((raw) => {
            if (!(providerID in raw)) return { result: false }
            const { [providerID]: _removed, ...rest } = raw
            return { raw: rest, result: true }
          }),
        changes: state.changes
      } satisfies Interface
    })
  )
