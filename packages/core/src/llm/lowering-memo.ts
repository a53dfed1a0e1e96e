export * as LoweringMemo from "./lowering-memo.js"

/**
 * Lowering Memo: what an immutable value lowered to, reused while it is the same object.
 *
 * A Step lowers its whole history into a provider request (the session's messages into request
 * messages, those into the wire's, the wire's into JSON), and the next Step lowers nearly the same
 * history again. The session's stored messages are immutable objects that the context cache keeps
 * across Steps (a message that changed is a new object), so each lowering can be remembered by the
 * object it was made from: a Step then does the work only for what is new since the last one.
 *
 * An entry is reused only when the object is the same (`===`) and so is its `key`: whatever else the
 * lowering read (e.g. whether the request goes to the model that wrote the message). A lowering must
 * depend on nothing else, and neither its input nor its result may be mutated afterwards. Entries go
 * with their object (a `WeakMap`): the memo holds nothing alive.
 */

export interface Memo<A extends object, B> {
  /** What was kept for this same `value` and `key`, if anything. */
  readonly get: (value: A, key: unknown) => B | undefined
  /** Keeps `lowered` for `value` and `key` (in place of what was kept for `value`); returns it. */
  readonly set: (value: A, key: unknown, lowered: B) => B
}

export const make = <A extends object, B>(): Memo<A, B> => {
  const made = new WeakMap<A, { readonly key: unknown; readonly lowered: B }>()
  return {
    get: (value, key) => {
      const known = made.get(value)
      return known !== undefined && known.key === key ? known.lowered : undefined
    },
    set: (value, key, lowered) => {
      made.set(value, { key, lowered })
      return lowered
    }
  }
}
