export {
  Cursor,
  Errors,
  Event,
  Identifier,
  InstanceEvent,
  Location,
  Model,
  Page,
  Session,
  Streaming
} from "@opencode-ai/client/effect"
export { HostTool } from "./host-tool.js"
export { OpenCode } from "./opencode.js"
