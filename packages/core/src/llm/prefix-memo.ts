export * as PrefixMemo from "./prefix-memo.js"

/**
 * Prefix Memo: a list's lowering, reused as far as the list begins as a list lowered before did.
 *
 * A Step lowers its whole history, and the next Step's history is the last one with a few messages
 * added at its end (the same objects: see LoweringMemo). A LoweringMemo finds what each message
 * lowered to, but every message is still visited, and on a long history the visits are the cost: the
 * messages lie scattered over the heap, and once other work has run between two Steps each visit
 * waits for memory. A Prefix Memo keeps each lowering run: a copy of its list, its output, and after
 * each item the output's length and the lowering's state. A run that begins with the same items
 * (compared as references, which reads only the two lists) in the same `context` starts from the
 * state after the last of them, with the output so far; only the items after them are lowered.
 *
 * A lowering is a fold: `step` lowers one item, appends to the output and returns the next state;
 * `end` appends what the final state still holds (e.g. an open turn). Both may depend on nothing but
 * their arguments and `context` (whatever else the lowering reads, compared item by item with
 * `===`). Neither the items, the states nor the outputs may be mutated afterwards; the caller gets a
 * copy of the output, which is its own.
 *
 * A run is found by the first and the last item of its list: the first is the new list's, the last
 * is looked for among the last {@link lookBack} items of the new one (a Step adds a few). So a list
 * and a tail of it (which ends alike) are kept side by side. A run that is continued is replaced by
 * the new one. At most `capacity` runs are kept, the least recently used dropped first.
 */

/** How far from the new list's end the last item of a kept run is looked for. */
export const lookBack = 64

interface Run<A, B, S> {
  /** A copy of the list lowered. */
  readonly items: ReadonlyArray<A>
  readonly context: ReadonlyArray<unknown>
  /** The output before `end` ran; `ends[i]` is its length after item `i`. */
  readonly out: Array<B>
  readonly ends: Array<number>
  /** The state after each item. */
  readonly states: Array<S>
}

export interface PrefixMemo<A extends object, B, S> {
  /** `items` lowered (see the module doc), reusing a kept run's output as far as its items are `items`' first. */
  readonly lower: (
    items: ReadonlyArray<A>,
    context: ReadonlyArray<unknown>,
    initial: S,
    step: (state: S, item: A, out: Array<B>) => S,
    end?: (state: S, out: Array<B>) => void
  ) => Array<B>
}

export const make = <A extends object, B, S>(capacity = 32): PrefixMemo<A, B, S> => {
  // Kept runs by the last item of their list, then by its first (a list and its tail end alike);
  // and all of them, least recently used first.
  const byLast = new Map<A, Map<A, Run<A, B, S>>>()
  const order = new Set<Run<A, B, S>>()

  const forget = (run: Run<A, B, S>) => {
    if (!order.delete(run)) return
    const last = run.items[run.items.length - 1]!
    const bucket = byLast.get(last)
    if (bucket?.get(run.items[0]!) !== run) return
    bucket.delete(run.items[0]!)
    if (bucket.size === 0) byLast.delete(last)
  }

  const keep = (run: Run<A, B, S>) => {
    const last = run.items[run.items.length - 1]!
    const bucket = byLast.get(last) ?? new Map<A, Run<A, B, S>>()
    const before = bucket.get(run.items[0]!)
    if (before !== undefined) forget(before)
    bucket.set(run.items[0]!, run)
    byLast.set(last, bucket)
    order.add(run)
    if (order.size > capacity) forget(order.values().next().value as Run<A, B, S>)
  }

  const sameContext = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>) =>
    a.length === b.length && a.every((value, index) => value === b[index])

  /** The kept run `items` continues, and how many of its items `items` begins with. */
  const continued = (items: ReadonlyArray<A>, context: ReadonlyArray<unknown>) => {
    const first = items[0]
    if (first === undefined) return undefined
    for (let index = items.length - 1; index >= 0 && index >= items.length - lookBack; index--) {
      const run = byLast.get(items[index]!)?.get(first)
      if (run === undefined || !sameContext(run.context, context)) continue
      let same = 0
      const limit = Math.min(run.items.length, items.length)
      while (same < limit && run.items[same] === items[same]) same++
      return { run, same }
    }
    return undefined
  }

  return {
    lower: (items, context, initial, step, end) => {
      const found = continued(items, context)
      // The run continued is forgotten, and its arrays are taken over: cut back to what is the same.
      let out: Array<B> = []
      let ends: Array<number> = []
      let states: Array<S> = []
      let state = initial
      if (found !== undefined) {
        const { run, same } = found
        forget(run)
        out = run.out
        ends = run.ends
        states = run.states
        out.length = ends[same - 1]!
        ends.length = same
        states.length = same
        state = states[same - 1]!
      }
      for (let index = ends.length; index < items.length; index++) {
        state = step(state, items[index]!, out)
        ends.push(out.length)
        states.push(state)
      }
      if (items.length > 0) keep({ items: items.slice(), context, out, ends, states })
      const result = out.slice()
      end?.(state, result)
      return result
    }
  }
}
