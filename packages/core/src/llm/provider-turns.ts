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

/** One wire turn: a role and its items in order. */
export interface Turn<Role extends string, Item> {
  readonly role: Role
  readonly items: ReadonlyArray<Item>
}

/**
 * The merged turns of `messages`. `itemsOf` gives each lowered message's role and items; it also
 * receives the latest assistant message before it (the calls a tool message answers). A turn of one
 * message has the very array `itemsOf` gave (so items kept with their message give the same turn
 * again); a turn that joins several has a new one. The arrays are never changed.
 */
export const merged = <Role extends string, Item>(
  messages: ReadonlyArray<LLMRequest.Message>,
  itemsOf: (
    message: InstructionLowering.Lowered,
    lastAssistant: LLMRequest.AssistantMessage | undefined
  ) => { readonly role: Role; readonly items: ReadonlyArray<Item> }
): Array<Turn<Role, Item>> => {
  const turns: Array<Turn<Role, Item>> = []
  let lastAssistant: LLMRequest.AssistantMessage | undefined
  for (const message of InstructionLowering.lower(messages)) {
    const { role, items } = itemsOf(message, lastAssistant)
    if (message.role === "assistant") lastAssistant = message
    if (items.length === 0) continue
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) turns[turns.length - 1] = { role, items: [...last.items, ...items] }
    else turns.push({ role, items })
  }
  return turns
}
