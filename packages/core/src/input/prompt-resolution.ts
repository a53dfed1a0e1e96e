export * as PromptResolution from "./prompt-resolution.js"

/**
 * PromptResolution: a submitted PromptInput made into the Prompt that admission records. The only
 * difference between the two is that every file attachment of a Prompt has its media type (`mime`)
 * settled, so this resolves each attachment's URI once, at admission, and never again:
 *
 * - a path (no URI scheme), absolute or relative to the session's Location directory, or a `file:`
 *   URL → it must exist and be readable; the URI becomes the absolute `file://` URL of the path, and
 *   the media type comes from the extension (`text/plain` when unknown; source files such as `.ts`
 *   and `.rs` are text), or is
 *   `application/x-directory` for a directory;
 * - a `data:` URL → kept as is; the media type is the one it declares (`text/plain` by default);
 * - an `http(s):` URL → kept as is (not fetched); the media type comes from the extension
 *   (`application/octet-stream` when unknown).
 *
 * A file's `start` / `end` query (a line range, see PromptFiles) is kept on its `file://` URL.
 *
 * Confinement: a file or directory must lie inside the Location directory, compared by real path
 * (symlinks resolved, as the tools compare), unless `outsideAllowed` says the path may be attached
 * from where it is (the session's agent allows `external_directory` there, e.g. the Managed Tool
 * Output directory); admission cannot ask, so anything else outside is refused.
 *
 * Anything else (another scheme, a missing or unreadable file, a file larger than
 * `AdmittedPrompt.maxAttachmentBytes` (5 MiB), a path outside the Location that is not allowed, a
 * malformed URL) is an InvalidRequestError (kind `prompt`) naming the attachment's field, e.g.
 * `prompt.files.0.uri`. More than `AdmittedPrompt.maxAttachments` files, or files together over
 * `AdmittedPrompt.maxAttachmentTotalBytes`, is one naming `prompt.files`.
 * Names, descriptions, sources and agent attachments are carried through unchanged.
 *
 * An Output Format is carried through too, once checked: a `json_schema` format's `schema` must be at
 * most `OutputFormat.maxSchemaLength` characters as JSON and compile (JsonSchemaValidator: its root an
 * object, a supported dialect, valid against its meta-schema, every `$ref` resolvable inside it);
 * otherwise an InvalidRequestError names `prompt.format.schema`.
 */

import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { FileSystem } from "@effect/platform"
import { AdmittedPrompt, Errors, OutputFormat, Quote } from "@opencode-ai/schema"
import { Effect, Either } from "effect"
import { Mime } from "mime"
import otherTypes from "mime/types/other.js"
import standardTypes from "mime/types/standard.js"
import { Traced } from "../observability/traced.js"
import { JsonSchemaValidator } from "../structured/json-schema-validator.js"
import { ToolPath } from "../tool/builtin/tool-path.js"

/**
 * The media types by extension: the `mime` database, except where it names a non-text type for a
 * common source file (`.ts` is MPEG transport stream there, `.rs` an XML format): a prompt attaching
 * code means code. Built on first use (it defines some two thousand types), not when a server starts.
 */
let promptTypes: Mime | undefined
const mime = (): Mime => {
  if (promptTypes === undefined) {
    promptTypes = new Mime(standardTypes, otherTypes).define(
      { "text/x-typescript": ["ts", "mts", "cts", "tsx"], "text/x-rust": ["rs"] },
      true
    )
  }
  return promptTypes
}

/** The media type of a directory attachment. */
export const directoryMime = "application/x-directory"

const invalid = (field: string, message: string) => new Errors.InvalidRequestError({ kind: "prompt", field, message })

const scheme = /^([a-z][a-z0-9+.-]*):/i

/** The media type a `data:` URL declares, or undefined when it is not a data URL. */
const dataMime = (uri: string): string | undefined => {
  const match = /^data:([^,]*),/i.exec(uri)
  if (match === null) return undefined
  const type = (match[1] ?? "").split(";")[0]?.trim() ?? ""
  return type === "" ? "text/plain" : type.toLowerCase()
}

/** Where attachments resolve and which outside paths they may name (see the module doc). */
export interface Options {
  /** The session's Location directory: relative paths resolve against it, files must lie in it. */
  readonly directory: string
  /**
   * Whether a file or directory outside the Location, at real path `real`, may be attached (`kind`
   * says which it is). Absent: none may.
   */
  readonly outsideAllowed?: ((real: string, kind: "file" | "directory") => boolean) | undefined
}

/** A resolved attachment and the bytes it counts for against the total. */
interface Resolved {
  readonly file: AdmittedPrompt.PromptFileAttachment
  readonly bytes: number
}

/** One attachment resolved against `options.directory`; `index` names it in errors. */
const resolveFile = Traced.fn("PromptResolution.file")(function* (
  file: AdmittedPrompt.PromptInputFileAttachment,
  index: number,
  options: Options
) {
  const directory = options.directory
  const fs = yield* FileSystem.FileSystem
  const field = `prompt.files.${index}.uri`
  const settled = (uri: string, type: string, bytes = 0): Resolved => ({ file: { ...file, uri, mime: type }, bytes })
  const protocol = scheme.exec(file.uri)?.[1]?.toLowerCase()

  if (protocol === "data") {
    const type = dataMime(file.uri)
    if (type === undefined) return yield* invalid(field, `Malformed data URL in attachment ${index}`)
    return settled(file.uri, type, file.uri.length)
  }
  if (protocol === "http" || protocol === "https") {
    const pathname = yield* Effect.try(() => new URL(file.uri).pathname).pipe(
      Effect.mapError(() => invalid(field, `Malformed URL in attachment ${index}: ${Quote.input(file.uri)}`))
    )
    return settled(file.uri, mime().getType(pathname) ?? "application/octet-stream")
  }

  // A Windows drive letter ("C:\...") is a path, not a scheme.
  const isPath = protocol === undefined || /^[a-z]:[\\/]/i.test(file.uri)
  if (!isPath && protocol !== "file") {
    return yield* invalid(
      field,
      `Unsupported URI scheme ${Quote.input(`${protocol}:`)} in attachment ${index}: use a path, file:, data: or http(s): URI`
    )
  }
  const absolute = isPath
    ? path.resolve(directory, file.uri)
    : yield* Effect.try(() => fileURLToPath(file.uri)).pipe(
        Effect.mapError(() => invalid(field, `Malformed file URL in attachment ${index}: ${Quote.input(file.uri)}`))
      )
  // The query of a file: URL (a line range) survives; the path is normalized.
  const query = isPath ? "" : (/\?[^#]*/.exec(file.uri)?.[0] ?? "")
  const unreadable = (reason: string) => invalid(field, `Cannot attach ${Quote.clip(absolute)}: ${reason}`)
  const info = yield* fs
    .stat(absolute)
    .pipe(
      Effect.mapError((error) =>
        unreadable(
          error._tag === "SystemError" && error.reason === "NotFound" ? "no such file or directory" : error.message
        )
      )
    )
  const kind = info.type === "Directory" ? "directory" : "file"
  const real = yield* Effect.try(() => ToolPath.realPathSync(absolute)).pipe(
    Effect.mapError((error) => unreadable((error as Error).message))
  )
  const realDir = yield* Effect.try(() => ToolPath.realPathSync(path.resolve(directory))).pipe(
    Effect.mapError((error) => unreadable((error as Error).message))
  )
  if (!ToolPath.isWithin(realDir, real) && options.outsideAllowed?.(real, kind) !== true) {
    return yield* unreadable(
      `it is outside the session's directory ${Quote.clip(directory)}, ` +
        "and the agent's permissions do not allow external_directory there"
    )
  }
  if (info.type === "Directory") {
    yield* fs.readDirectory(absolute).pipe(Effect.mapError((error) => unreadable(error.message)))
    return settled(pathToFileURL(absolute).href, directoryMime)
  }
  if (info.type !== "File") return yield* unreadable(`not a regular file (${info.type})`)
  if (info.size > AdmittedPrompt.maxAttachmentBytes) {
    return yield* unreadable(
      `${info.size} bytes is over the attachment limit of ${AdmittedPrompt.maxAttachmentBytes} bytes`
    )
  }
  yield* fs.access(absolute, { readable: true }).pipe(Effect.mapError((error) => unreadable(error.message)))
  return settled(`${pathToFileURL(absolute).href}${query}`, mime().getType(absolute) ?? "text/plain", Number(info.size))
})

/** Checks a prompt's Output Format (see the module doc). */
const checkFormat = Traced.fn("PromptResolution.format")(function* (format: OutputFormat.Format) {
  if (format.type !== "json_schema") return
  const field = "prompt.format.schema"
  const length = JSON.stringify(format.schema).length
  if (length > OutputFormat.maxSchemaLength) {
    return yield* invalid(
      field,
      `An output schema is at most ${OutputFormat.maxSchemaLength} characters as JSON; this one is ${length}`
    )
  }
  const compiled = yield* JsonSchemaValidator.compile(format.schema)
  if (Either.isLeft(compiled)) {
    return yield* invalid(field, `The output schema cannot be used: ${Quote.clip(compiled.left)}`)
  }
})

/**
 * `input` as a Prompt, with every file attachment resolved against the session's Location
 * `options.directory` (see the module doc). Reads the file system (stat and access) but never file
 * contents.
 */
export const resolve = Traced.fn("PromptResolution.resolve")(function* (
  input: AdmittedPrompt.PromptInput,
  options: Options
) {
  if (input.format !== undefined) yield* checkFormat(input.format)
  if (input.files !== undefined && input.files.length > AdmittedPrompt.maxAttachments) {
    return yield* invalid(
      "prompt.files",
      `A prompt has at most ${AdmittedPrompt.maxAttachments} file attachments; this one has ${input.files.length}`
    )
  }
  const resolved =
    input.files === undefined
      ? undefined
      : yield* Effect.forEach(input.files, (file, index) => resolveFile(file, index, options))
  const total = (resolved ?? []).reduce((sum, item) => sum + item.bytes, 0)
  if (total > AdmittedPrompt.maxAttachmentTotalBytes) {
    return yield* invalid(
      "prompt.files",
      `The attachments of a prompt are at most ${AdmittedPrompt.maxAttachmentTotalBytes} bytes together; ` +
        `these are ${total}`
    )
  }
  const files = resolved?.map((item) => item.file)
  const prompt: AdmittedPrompt.Prompt = {
    text: input.text,
    ...(files === undefined ? {} : { files }),
    ...(input.agents === undefined ? {} : { agents: input.agents }),
    ...(input.format === undefined ? {} : { format: input.format })
  }
  return prompt
})
