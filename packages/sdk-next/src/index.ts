export {
  Cursor,
  Errors,
  Event,
  Identifier,
  InstanceEvent,
  Location,
  Model,
  Session,
  Streaming
} from "@opencode-ai/client/effect"
export { OpenCode } from "./opencode.js"
