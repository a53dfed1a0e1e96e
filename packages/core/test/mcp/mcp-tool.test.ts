import { describe, expect, it } from "@effect/vitest"
import { McpTool } from "../../src/mcp/mcp-tool.js"

describe("McpTool.toResult", () => {
  it("text, image, audio, text and blob resources and resource links become Model Tool Output; structuredContent the structured result", () => {
    expect(
      McpTool.toResult({
        content: [
          { type: "text", text: "hello" },
          { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "file:///a.txt", text: "file text" } },
          { type: "resource", resource: { uri: "file:///b.bin", blob: "AQID", mimeType: "application/pdf" } },
          { type: "resource_link", uri: "https://example.com/doc", name: "doc" }
        ],
        structuredContent: { count: 1 }
      })
    ).toEqual({
      content: [
        { type: "text", text: "hello" },
        { type: "file", uri: "data:image/png;base64,iVBORw0KGgo=", mime: "image/png" },
        { type: "file", uri: "data:audio/wav;base64,AAAA", mime: "audio/wav" },
        { type: "text", text: "file text" },
        { type: "file", uri: "data:application/pdf;base64,AQID", mime: "application/pdf" },
        { type: "text", text: "Resource: https://example.com/doc (doc)" }
      ],
      structured: { count: 1 }
    })
  })

  it("an empty result says so instead of being empty", () => {
    expect(McpTool.toResult({ content: [] })).toEqual({
      content: [{ type: "text", text: "(the tool returned no content)" }]
    })
  })
})
