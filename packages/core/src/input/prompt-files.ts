export * as PromptFiles from "./prompt-files.js"

/**
 * PromptFiles: the files of the Session History made into what the model reads, for one Step.
 *
 * Two kinds of file reach the model: the attachments of a user message (`files`, settled at
 * admission by PromptResolution) and the files a tool returned (`ToolFileContent`, e.g. an image
 * `read` opened). {@link load} turns each into request parts, by kind:
 *
 * - **text** (any attachment that is not a directory, an image or a PDF): a synthetic read. The text
 *   says the user attached the file and how it was read, then gives exactly what the `read` built-in
 *   returns for it (numbered lines, the same limits and footer). The line range comes from the
 *   attachment: the URI's `start` / `end` query (1-based, inclusive), else a `#L10-20` / `#10-20` /
 *   `#10` suffix on its mention in the prompt (`source.text`). A `data:` text attachment is inlined
 *   as it is. A file that turns out binary or cannot be read becomes a note saying so.
 * - **directory**: its listing as `read` gives it.
 * - **image / PDF** (`image/*` except SVG, which is text; `application/pdf`): a native file part
 *   (`LLMRequest.FilePart`, a base64 `data:` URL; an `http(s):` URL is passed for the provider to
 *   fetch), ONLY when the Step's model accepts that input (`Catalog.Model.input` has `image` /
 *   `pdf`). Otherwise the model gets a short note naming the file and saying that the model in use
 *   cannot see it, so it can tell the user.
 * - anything else (a binary `data:` URL, a link that is not an image or PDF): a note naming it.
 *
 * Files are read when the Step's request is assembled, so a file changed since the prompt shows its
 * content as of the Step, and a file gone since becomes a note; a file over
 * `AdmittedPrompt.maxAttachmentBytes` by then becomes a note too. Nothing is written: interrupting
 * {@link load} leaves nothing behind. Paths are not confined again here: admission confined the
 * attachments (PromptResolution) and the tools confined what they returned.
 */

import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { FileSystem } from "@effect/platform"
import { AdmittedPrompt, type SessionMessages, type ToolContent } from "@opencode-ai/schema"
import { Effect } from "effect"
import type { Catalog } from "../config/catalog.js"
import { LLMRequest } from "../llm/llm-request.js"
import { LoweringMemo } from "../llm/lowering-memo.js"
import { PrefixMemo } from "../llm/prefix-memo.js"
import { Traced } from "../observability/traced.js"
import { ReadTool } from "../tool/builtin/read-tool.js"
import { directoryMime } from "./prompt-resolution.js"

/** What the files of one Step's history lower to (see the module doc). */
export interface Lowered {
  /** The parts a user message's attachments add after its text, by message id. */
  readonly user: ReadonlyMap<string, ReadonlyArray<LLMRequest.UserPart>>
  /**
   * By tool call id: the files a result returns that the model can see, and the notes (appended to
   * the result's text) for those it cannot.
   */
  readonly tool: ReadonlyMap<string, ToolFiles>
}

export interface ToolFiles {
  readonly files: ReadonlyArray<LLMRequest.FilePart>
  readonly notes: ReadonlyArray<string>
}

/** Nothing lowered: every file falls back to its plain reference. */
export const empty: Lowered = { user: new Map(), tool: new Map() }

/** The input kind a natively read media type needs from the model, if it is one. */
export const modality = (mime: string): "image" | "pdf" | undefined => {
  const type = mime.toLowerCase()
  if (type === "application/pdf") return "pdf"
  return type.startsWith("image/") && type !== "image/svg+xml" ? "image" : undefined
}

/** Whether `model` accepts the input `mime` needs (text always). */
export const accepts = (model: Pick<Catalog.Model, "input">, mime: string): boolean => {
  const kind = modality(mime)
  return kind === undefined || model.input.includes(kind)
}

const notAccepted = (label: string, mime: string) =>
  `The user attached ${label} (${mime}), but the model in use does not accept ${modality(mime)} input, ` +
  "so its content is not included here. If it matters for the request, tell the user that this model cannot see it."

/** The synthetic read of an attachment: what was attached, the read's input, then its output. */
const syntheticRead = (what: string, target: string, args: ReadTool.Input, output: string) =>
  `The user attached ${what} ${target}. Reading it with read ${JSON.stringify(args)} gives:\n${output}`

/** A `data:` URL's bytes, or undefined when it is malformed. */
const dataBytes = (uri: string): Buffer | undefined => {
  const match = /^data:([^,]*),(.*)$/is.exec(uri)
  if (match === null) return undefined
  const base64 = /;base64$/i.test(match[1] ?? "")
  try {
    return base64 ? Buffer.from(match[2] ?? "", "base64") : Buffer.from(decodeURIComponent(match[2] ?? ""), "utf8")
  } catch {
    return undefined
  }
}

const dataURL = (mime: string, bytes: Uint8Array) => `data:${mime};base64,${Buffer.from(bytes).toString("base64")}`

/**
 * The line range of an attachment, as `read`'s offset and limit: the URI's `start` / `end` query,
 * else a `#L10-20` / `#10-20` / `#10` suffix on its mention. Undefined means the whole file.
 */
export const lineRange = (
  file: Pick<AdmittedPrompt.PromptFileAttachment, "uri" | "source">
): { readonly offset: number; readonly limit?: number } | undefined => {
  let start: number | undefined
  let end: number | undefined
  const query = /\?([^#]*)/.exec(file.uri)?.[1]
  if (query !== undefined) {
    const params = new URLSearchParams(query)
    const parse = (key: string) => {
      const value = Number.parseInt(params.get(key) ?? "", 10)
      return Number.isInteger(value) && value >= 1 ? value : undefined
    }
    start = parse("start")
    end = parse("end")
  }
  if (start === undefined && file.source !== undefined) {
    const mention = /#L?(\d+)(?:-L?(\d+))?\s*$/i.exec(file.source.text)
    if (mention !== null) {
      start = Number.parseInt(mention[1] ?? "", 10)
      end = mention[2] === undefined ? start : Number.parseInt(mention[2], 10)
    }
  }
  if (start === undefined || start < 1) return undefined
  return end !== undefined && end >= start ? { offset: start, limit: end - start + 1 } : { offset: start }
}

const filePath = (uri: string): string | undefined => {
  try {
    return fileURLToPath(uri.replace(/[?#].*$/s, ""))
  } catch {
    return undefined
  }
}

const contentText = (result: { readonly content: ReadonlyArray<ToolContent.LLMToolContent> }) =>
  result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n")

/** The bytes of `target` as a data URL, or the reason it cannot be sent. */
const readNative = (fs: FileSystem.FileSystem, target: string, mime: string) =>
  Effect.gen(function* () {
    const info = yield* fs.stat(target)
    if (info.type !== "File") return { reason: "it is not a regular file" } as const
    if (Number(info.size) > AdmittedPrompt.maxAttachmentBytes) {
      return { reason: `it is over the attachment limit of ${AdmittedPrompt.maxAttachmentBytes} bytes` } as const
    }
    return { url: dataURL(mime, yield* fs.readFile(target)) } as const
  }).pipe(Effect.catchAll((error) => Effect.succeed({ reason: error.message } as const)))

/** The request parts of one user attachment (see the module doc). */
const userFile = Traced.fn("PromptFiles.userFile")(function* (
  fs: FileSystem.FileSystem,
  model: Pick<Catalog.Model, "input">,
  file: AdmittedPrompt.PromptFileAttachment
): Effect.fn.Return<ReadonlyArray<LLMRequest.UserPart>> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(file.uri)?.[1]?.toLowerCase()
  const native = modality(file.mime) !== undefined
  const note = (text: string) => [LLMRequest.text(text)]

  if (scheme === "data") {
    const label = file.name ?? "a file"
    if (native && !accepts(model, file.mime)) return note(notAccepted(label, file.mime))
    const bytes = dataBytes(file.uri)
    if (bytes === undefined) return note(`The user attached ${label} (${file.mime}), but its data URL is malformed.`)
    if (native) return [LLMRequest.file(file.mime, dataURL(file.mime, bytes), file.name)]
    if (bytes.subarray(0, 8192).includes(0)) {
      return note(`The user attached ${label} (${file.mime}), a binary file that cannot be shown to the model.`)
    }
    return note(`The user attached ${label} (${file.mime}); its content:\n${bytes.toString("utf8")}`)
  }
  if (scheme === "http" || scheme === "https") {
    if (!native) return note(`The user attached the link ${file.uri} (${file.mime}); it was not fetched.`)
    if (!accepts(model, file.mime)) return note(notAccepted(file.uri, file.mime))
    return [LLMRequest.file(file.mime, file.uri, file.name)]
  }

  const target = filePath(file.uri)
  if (target === undefined) return note(`The user attached ${file.uri}, which is not a readable file URL.`)
  if (file.mime === directoryMime) {
    const args = { path: target }
    return yield* ReadTool.readDirectory(fs, target, args).pipe(
      Effect.map((result) => note(syntheticRead("the directory", target, args, contentText(result)))),
      Effect.catchAll((error) =>
        Effect.succeed(note(`The user attached the directory ${target}, but ${error.message}`))
      )
    )
  }
  if (native) {
    if (!accepts(model, file.mime)) return note(notAccepted(target, file.mime))
    const read = yield* readNative(fs, target, file.mime)
    if ("reason" in read)
      return note(`The user attached ${target} (${file.mime}), but it cannot be sent: ${read.reason}.`)
    return [LLMRequest.file(file.mime, read.url, file.name ?? path.basename(target))]
  }
  const range = lineRange(file)
  const args = { path: target, ...(range ?? {}) }
  return yield* ReadTool.readText(fs, target, args).pipe(
    Effect.map((result) => note(syntheticRead("the file", target, args, contentText(result)))),
    Effect.catchAll((error) =>
      Effect.succeed(note(`The user attached ${target}, but it could not be read: ${error.message}`))
    )
  )
})

/** The files of one tool result the model can see, and notes for the others. */
const toolFiles = Traced.fn("PromptFiles.toolFiles")(function* (
  fs: FileSystem.FileSystem,
  model: Pick<Catalog.Model, "input">,
  content: ReadonlyArray<ToolContent.LLMToolContent>
): Effect.fn.Return<ToolFiles> {
  const files: Array<LLMRequest.FilePart> = []
  const notes: Array<string> = []
  for (const part of content) {
    if (part.type !== "file") continue
    const label = part.name ?? part.uri
    const kind = modality(part.mime)
    if (kind === undefined) {
      notes.push(`(The file ${label} (${part.mime}) is not shown: only images and PDFs are sent to the model.)`)
      continue
    }
    if (!accepts(model, part.mime)) {
      const what = kind === "pdf" ? "PDF" : "image"
      notes.push(`(The ${what} ${label} is not shown: the model in use does not accept ${kind} input.)`)
      continue
    }
    if (/^https?:/i.test(part.uri)) {
      files.push(LLMRequest.file(part.mime, part.uri, part.name))
      continue
    }
    const target = /^data:/i.test(part.uri) ? undefined : filePath(part.uri)
    if (target === undefined) {
      const bytes = dataBytes(part.uri)
      if (bytes === undefined) notes.push(`(The file ${label} cannot be shown: its URL is not readable.)`)
      else files.push(LLMRequest.file(part.mime, dataURL(part.mime, bytes), part.name))
      continue
    }
    const read = yield* readNative(fs, target, part.mime)
    if ("reason" in read) notes.push(`(The file ${label} cannot be shown: ${read.reason}.)`)
    else files.push(LLMRequest.file(part.mime, read.url, part.name ?? path.basename(target)))
  }
  return { files, notes }
})

/** A message of the history with files to lower: a user message's attachments or a tool result's files. */
type WithFiles =
  | { readonly _tag: "user"; readonly id: string; readonly files: ReadonlyArray<AdmittedPrompt.PromptFileAttachment> }
  | { readonly _tag: "tool"; readonly id: string; readonly content: ReadonlyArray<ToolContent.LLMToolContent> }

/** A message's entries of {@link withFiles}. */
const filesOf = (message: SessionMessages.SessionMessage): ReadonlyArray<WithFiles> => {
  if (message.type === "user") {
    return message.files !== undefined && message.files.length > 0
      ? [{ _tag: "user", id: message.id, files: message.files }]
      : []
  }
  if (message.type !== "assistant") return []
  const found: Array<WithFiles> = []
  for (const item of message.content) {
    if (item.type !== "tool" || item.state.status !== "completed") continue
    if (item.state.content.some((part) => part.type === "file")) {
      found.push({ _tag: "tool", id: item.id, content: item.state.content })
    }
  }
  return found
}

/**
 * Each message's entries, kept with the message (see LoweringMemo), and a history's, kept for the
 * history that continues it (see PrefixMemo): a Step looks only at what is new.
 */
const messageFiles = LoweringMemo.make<SessionMessages.SessionMessage, ReadonlyArray<WithFiles>>()
const historyFiles = PrefixMemo.make<SessionMessages.SessionMessage, WithFiles, undefined>()

/** The messages of `history` with files, in order (almost no message has any). */
const withFiles = (history: ReadonlyArray<SessionMessages.SessionMessage>): ReadonlyArray<WithFiles> =>
  historyFiles.lower(history, [], undefined, (_, message, out) => {
    const entries = messageFiles.get(message, null) ?? messageFiles.set(message, null, filesOf(message))
    for (const entry of entries) out.push(entry)
    return undefined
  })

/**
 * Lowers the files of `history` for a Step of `model`: every user message's attachments and every
 * completed tool call's file content (see the module doc). Reads the files; writes nothing.
 */
export const load = Traced.fn("PromptFiles.load")(function* (
  history: ReadonlyArray<SessionMessages.SessionMessage>,
  model: Pick<Catalog.Model, "input">
) {
  const found = withFiles(history)
  if (found.length === 0) return empty
  const fs = yield* FileSystem.FileSystem
  const user = new Map<string, ReadonlyArray<LLMRequest.UserPart>>()
  const tool = new Map<string, ToolFiles>()
  for (const entry of found) {
    if (entry._tag === "user") {
      const parts = yield* Effect.forEach(entry.files, (file) => userFile(fs, model, file))
      user.set(entry.id, parts.flat())
    } else {
      tool.set(entry.id, yield* toolFiles(fs, model, entry.content))
    }
  }
  const lowered: Lowered = { user, tool }
  return lowered
})
