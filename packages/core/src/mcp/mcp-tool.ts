export * as McpTool from "./mcp-tool.js"

/**
 * An MCP Tool: one tool of a connected MCP server, as the Tool Registry offers it to the model.
 *
 * - **Name and permission:** it goes by its {@link McpToolName} (server-prefixed), which is also its
 *   permission action; so an agent's rules hide it (`Permission.visibleTools`) or refuse a call like
 *   any Core tool's. Each call asks that action for the resource `*` (a reply of `always` saves `*`).
 * - **Input:** the server's own `inputSchema` is offered verbatim; the server validates the input.
 * - **Call:** `tools/call` on the server's current connection, after the permission check. The
 *   result's text parts are the Model Tool Output; images (and blob resources) become file contents
 *   (`data:` URIs); text resources their text; resource links their URI. `structuredContent` is the
 *   structured result. The output is bounded by the runner like every tool's (ModelToolOutput).
 * - **Failures are tool failures the model reads,** never a crashed Step: a result with `isError`
 *   (its text), a JSON-RPC error, a timeout ({@link callTimeoutMs}, restarted by every progress
 *   notification), a server that is not Connected (its status says why) or a connection lost mid-call.
 * - **Interruption:** interrupting the call aborts the request; the SDK sends the server
 *   `notifications/cancelled` for it, and the call settles as interrupted without waiting for the server.
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { CallToolResult, Tool as SdkTool } from "@modelcontextprotocol/sdk/types.js"
import type { ToolContent } from "@opencode-ai/schema"
import { Effect } from "effect"
import { Traced } from "../observability/traced.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import { McpToolName } from "./mcp-tool-name.js"

/** How long one call may go without a result or a progress notification, in milliseconds. */
export const callTimeoutMs = 300_000

/** The server's connection as the tool sees it at call time: a client, or why there is none. */
export type Connection =
  | { readonly _tag: "Connected"; readonly client: Client }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export interface Options {
  /** The server's config name. */
  readonly server: string
  /** The tool as the server listed it. */
  readonly tool: SdkTool
  /** The server's current connection (read at each call). */
  readonly connection: Effect.Effect<Connection>
  /** Overrides {@link callTimeoutMs}. */
  readonly timeoutMs?: number
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** The Model Tool Output (and structured result) of a `tools/call` result. Pure. */
export const toResult = (result: CallToolResult): ToolRegistry.Result => {
  const content: Array<ToolContent.LLMToolContent> = []
  for (const part of result.content ?? []) {
    switch (part.type) {
      case "text":
        content.push({ type: "text", text: part.text })
        break
      case "image":
      case "audio":
        content.push({ type: "file", uri: `data:${part.mimeType};base64,${part.data}`, mime: part.mimeType })
        break
      case "resource":
        if ("text" in part.resource && typeof part.resource.text === "string") {
          content.push({ type: "text", text: part.resource.text })
        } else if ("blob" in part.resource && typeof part.resource.blob === "string") {
          const mime = part.resource.mimeType ?? "application/octet-stream"
          content.push({ type: "file", uri: `data:${mime};base64,${part.resource.blob}`, mime })
        }
        break
      case "resource_link":
        content.push({ type: "text", text: `Resource: ${part.uri}${part.name ? ` (${part.name})` : ""}` })
        break
    }
  }
  if (content.length === 0) content.push({ type: "text", text: "(the tool returned no content)" })
  return result.structuredContent === undefined ? { content } : { content, structured: result.structuredContent }
}

/** The text of an `isError` result, as the failure the model reads. */
const errorMessage = (server: string, tool: string, result: CallToolResult): string => {
  const text = (result.content ?? [])
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join("\n")
    .trim()
  return text === "" ? `The ${tool} tool of MCP server ${server} reported an error` : text
}

/** The registry tool for `options.tool` of `options.server` (see the module doc). */
export const make = (options: Options): ToolRegistry.Tool => {
  const name = McpToolName.make(options.server, options.tool.name)
  const timeout = options.timeoutMs ?? callTimeoutMs
  const fail = (message: string) => new ToolRegistry.ToolFailure({ message })
  return {
    name,
    description:
      options.tool.description ?? options.tool.title ?? `The ${options.tool.name} tool of MCP server ${options.server}`,
    inputSchema: { ...options.tool.inputSchema },
    execute: Traced.fn("McpTool.execute")(
      function* (input, context) {
        yield* context.ask({
          action: name,
          resources: ["*"],
          metadata: { server: options.server, tool: options.tool.name, input },
          save: ["*"]
        })
        const connection = yield* options.connection
        if (connection._tag === "Unavailable") {
          return yield* fail(`MCP server ${options.server} is not available: ${connection.reason}`)
        }
        const result = yield* Effect.tryPromise({
          try: (signal) =>
            connection.client.callTool({ name: options.tool.name, arguments: { ...input } }, undefined, {
              signal,
              timeout,
              resetTimeoutOnProgress: true,
              // Asking for progress makes the server's progress notifications restart the timeout.
              onprogress: () => {}
            }),
          catch: (error) =>
            fail(`MCP server ${options.server} failed the ${options.tool.name} call: ${messageOf(error)}`)
        })
        const settled = result as CallToolResult
        if (settled.isError === true) return yield* fail(errorMessage(options.server, options.tool.name, settled))
        return toResult(settled)
      },
      (effect) => Effect.annotateLogs(effect, { mcpServer: options.server, tool: name })
    )
  }
}
