export * as WebFetchTool from "./webfetch-tool.js"

import type { ToolStructured } from "@opencode-ai/schema"
import { Duration, Effect, Schema } from "effect"
import type TurndownService from "turndown"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"

/** The largest response body read, in bytes (5 MiB); a larger one fails the call. */
export const defaultMaxBytes = 5 * 1024 * 1024
/** How long a fetch may take when the call names no `timeout`, in seconds. */
export const defaultTimeoutSeconds = 30
/** The longest `timeout` a call may ask for, in seconds. */
export const maxTimeoutSeconds = 120

export const Input = Schema.Struct({
  url: Schema.String.annotations({ description: "The http:// or https:// URL to fetch" }),
  format: Schema.optional(
    Schema.Literal("markdown", "text", "html").annotations({
      description: "How to return the content: markdown (default), plain text, or the raw HTML"
    })
  ),
  timeout: Schema.optional(
    Schema.Number.pipe(Schema.positive()).annotations({
      description: `Seconds to wait for the whole response (default ${defaultTimeoutSeconds}, at most ${maxTimeoutSeconds})`
    })
  )
})
export type Input = typeof Input.Type

export interface Options {
  /** Overrides {@link defaultMaxBytes}. */
  readonly maxBytes?: number | undefined
}

const description = `Fetches a web page or file over HTTP(S) and returns its content.

- HTML is converted to markdown unless you ask for "text" or "html"; other text types are returned as they are.
- Use it for documentation pages, API references and other URLs the user mentions or that you need to check.
- Responses larger than ${defaultMaxBytes / (1024 * 1024)} MB and requests slower than the timeout fail.`

/** The markdown converter (turndown): ATX headings, fenced code, `-` bullets; scripts and styles dropped. */
const markdownConverter = (Turndown: typeof TurndownService) => {
  const service = new Turndown({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    hr: "---"
  })
  service.remove(["script", "style", "noscript", "iframe", "object", "embed", "meta", "link"])
  return service
}

/** Plain text through the same converter: every element keeps only its text, blocks on their own lines. */
const textConverter = (Turndown: typeof TurndownService) => {
  const service = new Turndown()
  service.remove(["script", "style", "noscript", "iframe", "object", "embed", "meta", "link"])
  service.addRule("plain", {
    filter: () => true,
    replacement: (content, node) => ((node as { isBlock?: boolean }).isBlock ? `\n\n${content}\n\n` : content)
  })
  service.escape = (text) => text
  return service
}

let converters: Promise<{ readonly markdown: TurndownService; readonly text: TurndownService }> | undefined
/**
 * Both converters, made on the first HTML page converted (turndown and its DOM parser are loaded
 * then, once), so a server that fetches no HTML never loads them.
 */
const loadConverters = Effect.promise(
  () =>
    (converters ??= import("turndown").then(({ default: Turndown }) => ({
      markdown: markdownConverter(Turndown),
      text: textConverter(Turndown)
    })))
)

const isHtml = (contentType: string): boolean => /\b(text\/html|application\/xhtml\+xml)\b/i.test(contentType)
const isTextual = (contentType: string): boolean =>
  contentType === "" || /^text\/|\b(json|xml|javascript|ecmascript|yaml|toml|csv)\b/i.test(contentType)

const mimeOf = (contentType: string): string => contentType.split(";")[0]!.trim().toLowerCase()

/** Why a fetch failed, for the model. */
class FetchFailure {
  constructor(readonly message: string) {}
}

/**
 * Reads `response`'s body up to `maxBytes`: a declared or actual larger body fails (and the rest is
 * not read). Honours `signal` while reading.
 */
const readBody = async (response: Response, maxBytes: number): Promise<Uint8Array> => {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN)
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new FetchFailure(`The response is ${declared} bytes, more than the ${maxBytes}-byte limit`)
  }
  const reader = response.body?.getReader()
  if (reader === undefined) return new Uint8Array()
  const chunks: Array<Uint8Array> = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new FetchFailure(`The response is larger than the ${maxBytes}-byte limit`)
    }
    chunks.push(value)
  }
  const body = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return body
}

/**
 * The `webfetch` tool: GETs an `http:` or `https:` URL and returns its body.
 *
 * - **Permission:** asks `webfetch` for the URL before any request is made.
 * - **Conversion:** an HTML body becomes markdown (default) or plain text through turndown, or is
 *   returned raw with `format: "html"`; other textual bodies are returned as they are; an image is
 *   returned as a file content (a `data:` URI) for models that can see it; other binary bodies fail.
 * - **Limits:** the whole exchange (headers and body) must finish within `timeout` seconds (default
 *   {@link defaultTimeoutSeconds}, capped at {@link maxTimeoutSeconds}); a body over `maxBytes`
 *   ({@link defaultMaxBytes}) fails without being read further. The returned text is bounded like
 *   every tool's output (ModelToolOutput).
 * - **Failures** the model reads: a non-http(s) or malformed URL, a network error, an HTTP status of
 *   400 or more, a timeout, an oversized or binary body.
 * - **Interruption** aborts the request at once.
 */
export const make = (options: Options = {}) =>
  Effect.sync(() => {
    const maxBytes = options.maxBytes ?? defaultMaxBytes
    return BuiltinTool.define({
      name: "webfetch",
      description,
      input: Input,
      execute: Traced.fn("WebFetchTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
        const format = input.format ?? "markdown"
        let url: URL
        try {
          url = new URL(input.url)
        } catch {
          return yield* BuiltinTool.fail(`Not a URL: ${input.url}`)
        }
        if (url.protocol !== "http:" && url.protocol !== "https:") {
          return yield* BuiltinTool.fail(`Only http:// and https:// URLs can be fetched, not ${url.protocol}`)
        }
        const seconds = Math.min(input.timeout ?? defaultTimeoutSeconds, maxTimeoutSeconds)
        yield* context.ask({ action: "webfetch", resources: [url.href], metadata: { url: url.href, format } })

        const accept =
          format === "html"
            ? "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"
            : "text/html;q=0.9, text/markdown, text/plain, */*;q=0.5"
        const fetched = yield* Effect.tryPromise({
          try: async (signal) => {
            const response = await fetch(url, {
              signal,
              redirect: "follow",
              headers: { accept, "user-agent": "opencode-webfetch/0.1" }
            })
            if (response.status >= 400) {
              await response.body?.cancel().catch(() => undefined)
              throw new FetchFailure(`The request failed with HTTP status ${response.status} ${response.statusText}`)
            }
            const body = await readBody(response, maxBytes)
            return { response, body }
          },
          catch: (error) =>
            BuiltinTool.fail(
              error instanceof FetchFailure
                ? `Cannot fetch ${url.href}: ${error.message}`
                : `Cannot fetch ${url.href}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error)}`
            )
        }).pipe(
          Effect.timeoutFail({
            duration: Duration.seconds(seconds),
            onTimeout: () => BuiltinTool.fail(`Cannot fetch ${url.href}: no complete response within ${seconds} s`)
          })
        )

        const contentType = fetched.response.headers.get("content-type") ?? ""
        const mime = mimeOf(contentType)
        // Structured as upstream's webfetch: what was fetched, and the text returned.
        const structured = (output: string): ToolStructured.WebFetch => ({ url: url.href, contentType, format, output })
        if (mime.startsWith("image/") && mime !== "image/svg+xml") {
          const note = `Image fetched from ${url.href} (${mime}, ${fetched.body.byteLength} bytes)`
          return {
            content: [
              { type: "text" as const, text: note },
              {
                type: "file" as const,
                uri: `data:${mime};base64,${Buffer.from(fetched.body).toString("base64")}`,
                mime
              }
            ],
            structured: structured(note)
          }
        }
        if (!isTextual(mime) && !isHtml(mime) && mime !== "image/svg+xml") {
          return yield* BuiltinTool.fail(`Cannot show ${url.href}: its content type ${mime} is not text`)
        }
        const raw = new TextDecoder().decode(fetched.body)
        const converter = !isHtml(mime) || format === "html" ? undefined : yield* loadConverters
        const output =
          converter === undefined
            ? raw
            : format === "markdown"
              ? converter.markdown.turndown(raw)
              : converter.text
                  .turndown(raw)
                  .replace(/\n{3,}/g, "\n\n")
                  .trim()
        return BuiltinTool.text(output, structured(output))
      })
    })
  })
