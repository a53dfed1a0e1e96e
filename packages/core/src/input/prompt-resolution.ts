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
 * Anything else (another scheme, a missing or unreadable file, a file larger than
 * `AdmittedPrompt.maxAttachmentBytes` (5 MiB), a malformed URL) is an
 * InvalidRequestError (kind `prompt`) naming the attachment's field, e.g. `prompt.files.0.uri`.
 * Names, descriptions, sources and agent attachments are carried through unchanged.
 */

import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { FileSystem } from "@effect/platform"
import { AdmittedPrompt, Errors, Quote } from "@opencode-ai/schema"
import { Effect } from "effect"
import { Mime } from "mime"
import otherTypes from "mime/types/other.js"
import standardTypes from "mime/types/standard.js"

/**
 * The media types by extension: the `mime` database, except where it names a non-text type for a
 * common source file (`.ts` is MPEG transport stream there, `.rs` an XML format): a prompt attaching
 * code means code.
 */
const mime = new Mime(standardTypes, otherTypes).define(
  { "text/x-typescript": ["ts", "mts", "cts", "tsx"], "text/x-rust": ["rs"] },
  true
)

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

/** One attachment resolved against `directory`; `index` names it in errors. */
const resolveFile = Effect.fn("PromptResolution.file")(function* (
  file: AdmittedPrompt.PromptInputFileAttachment,
  index: number,
  directory: string
) {
  const fs = yield* FileSystem.FileSystem
  const field = `prompt.files.${index}.uri`
  const settled = (uri: string, type: string): AdmittedPrompt.PromptFileAttachment => ({ ...file, uri, mime: type })
  const protocol = scheme.exec(file.uri)?.[1]?.toLowerCase()

  if (protocol === "data") {
    const type = dataMime(file.uri)
    if (type === undefined) return yield* invalid(field, `Malformed data URL in attachment ${index}`)
    return settled(file.uri, type)
  }
  if (protocol === "http" || protocol === "https") {
    const pathname = yield* Effect.try(() => new URL(file.uri).pathname).pipe(
      Effect.mapError(() => invalid(field, `Malformed URL in attachment ${index}: ${Quote.input(file.uri)}`))
    )
    return settled(file.uri, mime.getType(pathname) ?? "application/octet-stream")
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
  return settled(pathToFileURL(absolute).href, mime.getType(absolute) ?? "text/plain")
})

/**
 * `input` as a Prompt, with every file attachment resolved against the session's Location
 * `directory` (see the module doc). Reads the file system (stat and access) but never file contents.
 */
export const resolve = Effect.fn("PromptResolution.resolve")(function* (
  input: AdmittedPrompt.PromptInput,
  directory: string
) {
  const files =
    input.files === undefined
      ? undefined
      : yield* Effect.forEach(input.files, (file, index) => resolveFile(file, index, directory))
  const prompt: AdmittedPrompt.Prompt = {
    text: input.text,
    ...(files === undefined ? {} : { files }),
    ...(input.agents === undefined ? {} : { agents: input.agents })
  }
  return prompt
})
