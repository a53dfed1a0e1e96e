import { describe, expect, it } from "vitest"
import { InstructionLowering } from "../../src/llm/instruction-lowering.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { PrefixMemo } from "../../src/llm/prefix-memo.js"

/**
 * PrefixMemo.lower: a fold over a list, reused as far as the list begins as a kept run's did. Every
 * result here is checked against the same fold run afresh; `steps` counts the items lowered.
 */

interface Item {
  readonly value: number
}

/** A fold with a state and an `end`: runs of equal parity are summed; each sum is an output. */
const sums = () => {
  let steps = 0
  const memo = PrefixMemo.make<Item, number, { readonly parity: number; readonly sum: number } | undefined>(4)
  const step = (
    state: { readonly parity: number; readonly sum: number } | undefined,
    item: Item,
    out: Array<number>
  ) => {
    steps++
    const parity = item.value % 2
    if (state === undefined || state.parity === parity) return { parity, sum: (state?.sum ?? 0) + item.value }
    out.push(state.sum)
    return { parity, sum: item.value }
  }
  const end = (state: { readonly parity: number; readonly sum: number } | undefined, out: Array<number>) => {
    if (state !== undefined) out.push(state.sum)
  }
  const fresh = (items: ReadonlyArray<Item>) => {
    const out: Array<number> = []
    let state: { readonly parity: number; readonly sum: number } | undefined
    for (const item of items) {
      const parity = item.value % 2
      if (state === undefined || state.parity === parity) state = { parity, sum: (state?.sum ?? 0) + item.value }
      else {
        out.push(state.sum)
        state = { parity, sum: item.value }
      }
    }
    end(state, out)
    return out
  }
  return {
    lower: (items: ReadonlyArray<Item>, context: ReadonlyArray<unknown> = []) => {
      const before = steps
      const out = memo.lower(items, context, undefined, step, end)
      expect(out).toEqual(fresh(items))
      return { out, steps: steps - before }
    }
  }
}

const items = (...values: ReadonlyArray<number>): Array<Item> => values.map((value) => ({ value }))

describe("PrefixMemo.lower", () => {
  it("a list that continues one lowered before lowers only its new items, from the state the last one left", () => {
    const memo = sums()
    const list = items(1, 3, 2, 4, 5)
    expect(memo.lower(list).steps).toBe(5)
    const grown = [...list, ...items(7, 8)]
    expect(memo.lower(grown).steps).toBe(2)
    // The same list again (a retry): nothing is lowered.
    expect(memo.lower(grown).steps).toBe(0)
    // Another context: lowered afresh.
    expect(memo.lower([...grown, ...items(9)], ["other"]).steps).toBe(8)
  })

  it("lowers again from the first item that is not the same object, whatever changed", () => {
    const memo = sums()
    const list = items(1, 2, 3, 4, 5, 6)
    memo.lower(list)
    // An equal item that is another object counts as changed.
    const edited = [...list.slice(0, 3), { value: 4 }, ...list.slice(4)]
    expect(memo.lower(edited).steps).toBe(3)
    // A shorter list is not found by its last item (a kept run is found by its own last item).
    expect(memo.lower(edited.slice(0, 2)).steps).toBe(2)
    expect(memo.lower([...edited.slice(0, 2), ...items(10, 11)]).steps).toBe(2)
    expect(memo.lower([...list].reverse()).steps).toBe(6)
    expect(memo.lower([]).out).toEqual([])
  })

  it("a list and a tail of it, lowered in turn as they grow, are both reused", () => {
    const memo = sums()
    const list = items(1, 2, 3, 4, 5, 6, 7, 8)
    memo.lower(list)
    memo.lower(list.slice(5))
    for (let i = 0; i < 3; i++) {
      list.push({ value: 20 + i })
      expect(memo.lower(list).steps).toBe(1)
      expect(memo.lower(list.slice(5)).steps).toBe(1)
    }
  })

  it("the caller's copies are its own: changing the list or the output changes nothing kept", () => {
    const memo = sums()
    const list = items(1, 2, 3)
    const first = memo.lower(list).out
    first.push(999)
    list.push({ value: 4 })
    list[0] = { value: 100 }
    const again = items(5)
    expect(memo.lower([...list.slice(1, 3), ...again]).steps).toBe(3)
  })

  it("stays exact as more lists are lowered than are kept", () => {
    const memo = sums()
    const lists = Array.from({ length: 7 }, (_, i) => items(i, i + 1))
    for (let round = 0; round < 3; round++) {
      for (const [i, list] of lists.entries()) {
        list.push({ value: round * 10 + i })
        memo.lower(list)
      }
    }
  })
})

describe("InstructionLowering.lower reused", () => {
  it("gives what a history made of new objects gives, as updates and messages are added", () => {
    const history: Array<LLMRequest.Message> = [LLMRequest.user("one"), LLMRequest.assistant(LLMRequest.text("a"))]
    const copy = (list: ReadonlyArray<LLMRequest.Message>) => structuredClone(list) as Array<LLMRequest.Message>
    const check = () => expect(InstructionLowering.lower(history)).toEqual(InstructionLowering.lower(copy(history)))
    check()
    history.push(LLMRequest.instructionUpdate("rules changed"))
    check()
    history.push(LLMRequest.user("two"))
    check()
    const merged = InstructionLowering.lower(history)
    history.push(LLMRequest.assistant(LLMRequest.text("b")), LLMRequest.instructionUpdate("again"))
    check()
    // A merged user turn stays the same object from one lowering to the next.
    expect(InstructionLowering.lower(history)[2]).toBe(merged[2])
    history.push(LLMRequest.tool(LLMRequest.toolResult("c", "read", "out")), LLMRequest.user("three"))
    check()
  })
})
