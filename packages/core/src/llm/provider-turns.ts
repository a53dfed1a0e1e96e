export * as ProviderTurns from "./provider-turns.js"

/**
 * Provider Turns: the conversation as the protocols that want one turn per role change carry it
 * (Anthropic Messages, the Gemini API). The history's Instruction Updates are lowered first (see
 * {@link InstructionLowering}); then each message becomes one role's items (the adapter's wire
 * blocks or parts), and consecutive items of one role join a single turn, so tool results that follow
 * a user message (both `user` on the wire) share its turn. A message without items adds nothing.
 * Pure.
 */

import * as InstructionLowering from "./instruction-lowering.js"
import type * as LLMRequest from "./llm-request.js"
import * as LoweringMemo from "./lowering-memo.js"
import * as PrefixMemo from "./prefix-memo.js"

/** How an adapter carries one kind of message: the wire role of its turn, and its items. */
interface Carried<Role extends string, Item, M, Context> {
  readonly role: Role
  readonly items: (message: M, context: Context) => ReadonlyArray<Item>
}

/**
 * An adapter's wire form per message role. A tool message's items also receive the latest assistant
 * message before it (the calls it answers). Each `items` must depend on its arguments only.
 */
export interface Roles<Role extends string, Item> {
  readonly user: Carried<Role, Item, LLMRequest.UserMessage, void>
  readonly assistant: Carried<Role, Item, LLMRequest.AssistantMessage, void>
  readonly tool: Carried<Role, Item, LLMRequest.ToolMessage, LLMRequest.AssistantMessage | undefined>
}

/** Where merging stands after a message: the latest assistant message, and the turn still open. */
interface State<Role extends string, Item> {
  readonly lastAssistant: LLMRequest.AssistantMessage | undefined
  readonly open: { readonly role: Role; readonly items: ReadonlyArray<Item> } | undefined
}

const initial: State<never, never> = { lastAssistant: undefined, open: undefined }

/**
 * An adapter's merging of a request's messages into turns, each made by `turn` from its role and
 * items. What it makes is kept and reused:
 * - each message's items, while it is the same object (a tool message's, while the assistant
 *   message before it is the same too; see LoweringMemo);
 * - a turn of one message, with its items (so an unchanged history gives the same turn objects, whose
 *   text RequestJson reuses); a turn that joins several messages is a new object;
 * - the merged turns of a history, for the next history that continues it (see PrefixMemo).
 * Neither the items nor the turns may be mutated by the caller.
 */
export const make = <Role extends string, Item, T>(
  roles: Roles<Role, Item>,
  turn: (role: Role, items: ReadonlyArray<Item>) => T
): ((messages: ReadonlyArray<LLMRequest.Message>) => Array<T>) => {
  const userItems = LoweringMemo.make<LLMRequest.UserMessage, ReadonlyArray<Item>>()
  const assistantItems = LoweringMemo.make<LLMRequest.AssistantMessage, ReadonlyArray<Item>>()
  const toolItems = LoweringMemo.make<LLMRequest.ToolMessage, ReadonlyArray<Item>>()
  const turns = LoweringMemo.make<ReadonlyArray<Item>, T>()
  const runs = PrefixMemo.make<InstructionLowering.Lowered, T, State<Role, Item>>()

  const itemsOf = (message: InstructionLowering.Lowered, lastAssistant: LLMRequest.AssistantMessage | undefined) => {
    switch (message.role) {
      case "user":
        return userItems.get(message, null) ?? userItems.set(message, null, roles.user.items(message))
      case "assistant":
        return assistantItems.get(message, null) ?? assistantItems.set(message, null, roles.assistant.items(message))
      case "tool":
        return (
          toolItems.get(message, lastAssistant) ??
          toolItems.set(message, lastAssistant, roles.tool.items(message, lastAssistant))
        )
    }
  }
  const turnOf = (role: Role, items: ReadonlyArray<Item>): T =>
    turns.get(items, role) ?? turns.set(items, role, turn(role, items))

  return (messages) =>
    runs.lower(
      InstructionLowering.lower(messages),
      [],
      initial,
      (state, message, out) => {
        const role = roles[message.role].role
        const items = itemsOf(message, state.lastAssistant)
        const lastAssistant = message.role === "assistant" ? message : state.lastAssistant
        if (items.length === 0) return { lastAssistant, open: state.open }
        const open = state.open
        if (open !== undefined && open.role === role) {
          return { lastAssistant, open: { role, items: [...open.items, ...items] } }
        }
        if (open !== undefined) out.push(turnOf(open.role, open.items))
        return { lastAssistant, open: { role, items } }
      },
      (state, out) => {
        if (state.open !== undefined) out.push(turnOf(state.open.role, state.open.items))
      }
    )
}
