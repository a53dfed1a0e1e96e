import { describe, expect, it } from "vitest"
import { RequestJson } from "../../src/llm/request-json.js"

/**
 * RequestJson.encode: the bytes of `JSON.stringify(body)`, with the conversation list made from the
 * last body whose list it continues. Every body here is checked against `JSON.stringify`; the items
 * that count how often they are serialised (through `toJSON`, which JSON.stringify calls) show what
 * was serialised afresh.
 */

/** Whether {@link Counted} items count (not while the expected text is made). */
let counting = true

/** A wire message that counts its serialisations by `RequestJson`. */
class Counted {
  serialised = 0
  constructor(readonly value: Record<string, unknown>) {}
  toJSON() {
    if (counting) this.serialised++
    return this.value
  }
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")
const same = (body: unknown, listKey?: string) => {
  const encoded = text(RequestJson.encode(body, listKey))
  counting = false
  const expected = JSON.stringify(body)
  counting = true
  expect(encoded).toBe(expected)
}

const conversation = (count: number, tag = "") =>
  Array.from(
    { length: count },
    (_, i) => new Counted({ role: i % 2 === 0 ? "user" : "assistant", content: `${tag}message ${i} é ✓ "quoted"` })
  )

const body = (system: string, messages: ReadonlyArray<unknown>) => ({
  model: "m",
  messages: [{ role: "system", content: system }, ...messages],
  tools: [{ type: "function", function: { name: "read", parameters: { type: "object" } } }],
  absent: undefined,
  stream: true
})

describe("RequestJson.encode", () => {
  it("writes exactly JSON.stringify's text, with or without a list key", () => {
    same({ a: 1, b: "ü\u2028", c: [1, undefined, () => 0, null, { d: [] }], e: undefined, f: { g: 2 } })
    same({ a: 1, b: "ü\u2028", c: [1, undefined, () => 0, null, { d: [] }], e: undefined, f: { g: 2 } }, "c")
    same({ list: [], after: 1 }, "list")
    same({ before: 1, list: "not a list" }, "list")
    same({ only: [{ x: 1 }] }, "only")
    same([1, 2, 3], "0")
    same({ toJSON: () => ({ replaced: true }), list: [1] }, "list")
    same("text", "list")
    same(null, "list")
    // A hole serialises as null.
    const holed: Array<number> = []
    holed[0] = 1
    holed[2] = 3
    same({ list: holed }, "list")
  })

  it("a list that continues an earlier one serialises only its new items; the bytes stay exact", () => {
    const history = conversation(40)
    same(body("be brief", history), "messages")
    for (const message of history) expect(message.serialised).toBe(1)

    // The next Step: the same messages (a fresh system message with the same text) and two more.
    const grown = [...history, ...conversation(2, "new ")]
    same(body("be brief", grown), "messages")
    for (const message of history) expect(message.serialised).toBe(1)
    for (const message of grown.slice(40)) expect(message.serialised).toBe(1)

    // The same list again (a retry): nothing is serialised afresh.
    same(body("be brief", grown), "messages")
    for (const message of grown) expect(message.serialised).toBe(1)
  })

  it("a list whose last item was a copy made for that body alone (a prompt-cache mark) is continued from the item before it", () => {
    const history = conversation(30)
    const marked = (list: ReadonlyArray<Counted>) => [
      ...list.slice(0, -1),
      new Counted({ ...list[list.length - 1]!.value, cache_control: { type: "ephemeral" } })
    ]
    same(body("s", marked(history)), "messages")
    const grown = [...history, ...conversation(2, "new ")]
    same(body("s", marked(grown)), "messages")
    // Only the item that was marked (now plain) and the new ones are serialised again.
    for (const message of history.slice(0, -1)) expect(message.serialised).toBe(1)
    expect(history[history.length - 1]!.serialised).toBe(1)
    expect(grown[grown.length - 2]!.serialised).toBe(1)
  })

  it("a list that differs from the last one serialises from the first difference on", () => {
    const history = conversation(20)
    same(body("system", history), "messages")
    // Another system text: everything after it is written again.
    same(body("another system", history), "messages")
    for (const message of history) expect(message.serialised).toBe(2)
    // An item replaced in the middle by another object with other text.
    const edited = [...history.slice(0, 10), new Counted({ role: "user", content: "edited" }), ...history.slice(11)]
    same(body("another system", edited), "messages")
    for (const message of history.slice(0, 10)) expect(message.serialised).toBe(2)
    for (const message of history.slice(11)) expect(message.serialised).toBe(3)
    // An item taken out, an item taken from the end, a list reordered, a shorter list.
    same(body("another system", [...edited.slice(0, 5), ...edited.slice(6)]), "messages")
    same(body("another system", edited.slice(0, -1)), "messages")
    same(body("another system", [...edited].reverse()), "messages")
    same(body("another system", edited.slice(0, 3)), "messages")
  })

  it("a body once made is never written again, whatever the lists made after it", () => {
    const history = conversation(50)
    const made: Array<readonly [Uint8Array, string]> = []
    const encode = (list: ReadonlyArray<unknown>) => {
      const value = body("s", list)
      made.push([RequestJson.encode(value, "messages"), JSON.stringify(value)])
    }
    encode(history)
    // Continued in place many times over (the kept bytes grow where they are), edited in the middle,
    // shortened, and grown again.
    for (let i = 0; i < 40; i++) {
      history.push(new Counted({ role: "user", content: `more ${i} ${"x".repeat(i * 50)}` }))
      encode(history)
    }
    const edited = [...history.slice(0, 20), new Counted({ role: "user", content: "edited" }), ...history.slice(21)]
    encode(edited)
    encode(edited.slice(0, 30))
    encode([...edited.slice(0, 30), new Counted({ role: "assistant", content: "after the cut" })])
    counting = false
    for (const [bytes, expected] of made) expect(text(bytes)).toBe(expected)
    counting = true
  })

  it("stays exact as more conversations are encoded than are kept", () => {
    const sessions = Array.from({ length: RequestJson.capacity + 8 }, (_, i) => conversation(5, `s${i} `))
    for (let round = 0; round < 3; round++) {
      for (const [i, history] of sessions.entries()) {
        history.push(new Counted({ role: "user", content: `round ${round} of ${i}` }))
        same(body(`system ${i}`, history), "messages")
      }
    }
  })
})
