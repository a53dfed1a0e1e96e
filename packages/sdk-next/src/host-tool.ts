export * as HostTool from "./host-tool.js"

/**
 * A Host Tool: a tool the program embedding OpenCode defines in Effect and registers with its
 * Embedded OpenCode host (`OpenCode.embedded({ tools })` or `host.tools.register`). It exists only
 * in that process: networked clients cannot register one. The model sees and calls it like any other
 * tool, and it takes the same paths as the built-in ones:
 *
 * - **Offer and permission.** Its name is its permission action, so an agent's rules hide it or
 *   refuse a call like a built-in's (`permission: { "<name>": "deny" }`). Each call with valid input
 *   asks that action for the resource `*` (a reply of `always` saves `*`) before the handler runs; a
 *   denied or rejected call settles as a tool failure the model reads.
 * - **Input.** With an Effect Schema, the JSON Schema the model sees derives from it, and the call's
 *   input is decoded against it first: invalid input settles as a tool failure naming the offending
 *   fields, and the handler receives the decoded value. With a plain JSON Schema object, it is offered
 *   as it is and the handler receives the input object unchecked.
 * - **Output.** The handler's text (or content parts) is the Model Tool Output, bounded by the runner
 *   like every tool's: past the configured limits the complete text moves to a Managed Tool Output
 *   File and the model gets a bounded preview with its path.
 * - **Failure and interruption.** A `ToolFailure` (see {@link fail}) settles the call as failed with its
 *   message for the model to read; a defect is logged and settles it as failed too. Interrupting the
 *   Step interrupts the handler.
 *
 * A Host Tool named like a built-in tool replaces it while registered.
 */

import { ToolRegistry } from "@opencode-ai/core"
import { Effect, JSONSchema, ParseResult, Schema } from "effect"

/** A JSON Schema for a tool's input object, offered to the model verbatim. */
export type JsonSchema = Readonly<Record<string, unknown>>

/** What the handler knows about the call it serves: its session, call id, agent and directory. */
export type CallContext = ToolRegistry.CallContext

/** The handler's answer: text for the model, or content parts with optional structured output. */
export type Output = string | ToolRegistry.Result

/** An expected failure of a Host Tool: the model is told `message` and may try again. */
export const ToolFailure = ToolRegistry.ToolFailure
export type ToolFailure = ToolRegistry.ToolFailure

/** Fails the call with a message the model reads. */
export const fail = (message: string): Effect.Effect<never, ToolFailure> =>
  Effect.fail(new ToolRegistry.ToolFailure({ message }))

/** A Host Tool's definition; see the module doc for how each part is used. */
export interface Definition<I> {
  /** The tool's name and permission action: letters, digits, `_` and `-`, at most 64 characters. */
  readonly name: string
  /** What the model reads to decide when to call it. */
  readonly description: string
  /** The input: an Effect Schema (decoded, JSON Schema derived) or a JSON Schema object (unchecked). */
  readonly parameters: Schema.Schema<I, any, never> | JsonSchema
  /** Runs one call, after its permission is granted. */
  readonly execute: (input: I, context: CallContext) => Effect.Effect<Output, ToolFailure>
}

/** A Host Tool, ready to register; made by {@link make}. */
export interface HostTool {
  readonly _tag: "HostTool"
  readonly name: string
  readonly tool: ToolRegistry.Tool
}

/** A Host Tool whose name a provider would refuse. */
export class InvalidHostToolError extends Schema.TaggedError<InvalidHostToolError>()(
  "@opencode-ai/sdk-next/InvalidHostToolError",
  { name: Schema.String, message: Schema.String }
) {}

/** The tool names every supported provider accepts. */
export const namePattern = /^[A-Za-z0-9_-]{1,64}$/

/** Checks a Host Tool before it is registered: its name must match {@link namePattern}. */
export const validate = (tool: HostTool): Effect.Effect<HostTool, InvalidHostToolError> =>
  namePattern.test(tool.name)
    ? Effect.succeed(tool)
    : Effect.fail(
        new InvalidHostToolError({
          name: tool.name,
          message: `Host tool name ${JSON.stringify(tool.name)} must be 1 to 64 letters, digits, "_" or "-"`
        })
      )

const describeIssues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`))
    .join("; ")

const toResult = (output: Output): ToolRegistry.Result =>
  typeof output === "string" ? { content: [{ type: "text", text: output }] } : output

/** A Host Tool from its definition (see the module doc). Pure: registering it is the host's part. */
export const make = <I>(definition: Definition<I>): HostTool => {
  const schema = Schema.isSchema(definition.parameters) ? (definition.parameters as Schema.Schema<I, any, never>) : null
  const decode =
    schema === null
      ? (input: Readonly<Record<string, unknown>>) => Effect.succeed(input as I)
      : (input: Readonly<Record<string, unknown>>) =>
          Schema.decodeUnknown(schema, { errors: "all" })(input).pipe(
            Effect.mapError(
              (error) =>
                new ToolRegistry.ToolFailure({
                  message: `Invalid input for the ${definition.name} tool: ${describeIssues(error)}`
                })
            )
          )
  const inputSchema: JsonSchema =
    schema === null
      ? (definition.parameters as JsonSchema)
      : (({ $schema: _, ...rest }) => rest)(JSONSchema.make(schema) as unknown as Record<string, unknown>)
  return {
    _tag: "HostTool",
    name: definition.name,
    tool: {
      name: definition.name,
      description: definition.description,
      inputSchema,
      execute: (input, context) =>
        decode(input).pipe(
          Effect.tap(() =>
            context.ask({
              action: definition.name,
              resources: ["*"],
              metadata: { tool: definition.name, input },
              save: ["*"]
            })
          ),
          Effect.flatMap((decoded) => definition.execute(decoded, context)),
          Effect.map(toResult),
          Effect.withSpan(`HostTool.${definition.name}`, {
            attributes: { sessionID: context.sessionID, callID: context.callID }
          })
        )
    }
  }
}
