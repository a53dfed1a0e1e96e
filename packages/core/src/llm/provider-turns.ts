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
import * as PrefixMemo from "./prefix-memo.js"

/** Where merging stands after a message: the latest assistant message, and the turn still open. */
interface State<Role extends string, Item> {
  readonly lastAssistant: LLMRequest.AssistantMessage | undefined
  readonly open: { readonly role: Role; readonly items: ReadonlyArray<Item> } | undefined
}

/** An adapter's merged turns, kept for the next history that continues one (see PrefixMemo). */
export type Memo<Role extends string, Item, T> = PrefixMemo.PrefixMemo<
  InstructionLowering.Lowered,
  T,
  State<Role, Item>
>

export const memo = <Role extends string, Item, T>(): Memo<Role, Item, T> => PrefixMemo.make()

const initial: State<never, never> = { lastAssistant: undefined, open: undefined }

/**
 * The merged turns of `messages`, each made by `turn` from its role and items. `itemsOf` gives each
 * lowered message's role and items; it also receives the latest assistant message before it (the
 * calls a tool message answers). A turn of one message has the very array `itemsOf` gave (so items
 * kept with their message give the same turn again); a turn that joins several has a new one. The
 * arrays are never changed. A history that continues one merged before is merged from where it
 * differs, through `memo`: `itemsOf` and `turn` must be the same functions of their arguments at
 * every call.
 */
export const merged = <Role extends string, Item, T>(
  memo: Memo<Role, Item, T>,
  messages: ReadonlyArray<LLMRequest.Message>,
  itemsOf: (
    message: InstructionLowering.Lowered,
    lastAssistant: LLMRequest.AssistantMessage | undefined
  ) => { readonly role: Role; readonly items: ReadonlyArray<Item> },
  turn: (role: Role, items: ReadonlyArray<Item>) => T
): Array<T> =>
  memo.lower(
    InstructionLowering.lower(messages),
    [],
    initial,
    (state, message, out) => {
      const { role, items } = itemsOf(message, state.lastAssistant)
      const lastAssistant = message.role === "assistant" ? message : state.lastAssistant
      if (items.length === 0) return { lastAssistant, open: state.open }
      const open = state.open
      if (open !== undefined && open.role === role) {
        return { lastAssistant, open: { role, items: [...open.items, ...items] } }
      }
      if (open !== undefined) out.push(turn(open.role, open.items))
      return { lastAssistant, open: { role, items } }
    },
    (state, out) => {
      if (state.open !== undefined) out.push(turn(state.open.role, state.open.items))
    }
  )
