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
export { OpenCode } from "./opencode.js"
