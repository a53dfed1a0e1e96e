export { OpenCode } from "./opencode.js"
export { Cursor, Errors, Identifier, Location, Model, Session } from "@opencode-ai/client/effect"
