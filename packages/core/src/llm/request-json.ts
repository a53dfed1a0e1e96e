export * as RequestJson from "./request-json.js"

/**
 * Request JSON: a provider request body as the bytes of its JSON text, made incrementally for the
 * conversation list it carries.
 *
 * Consecutive Steps of a session send nearly the same conversation: the last request's list with a
 * few messages added at its end. The wire messages of an unchanged history are the same objects from
 * one Step to the next (see LoweringMemo), so the bytes of the list as far as it is unchanged can be
 * taken from the last list made: {@link encode} keeps, for recently made lists, their objects, the
 * bytes of their texts and where each text ends; it finds the list the new one continues (by one of
 * its last two objects, among the new list's last ones: the last may be a copy made for that body
 * alone, as the Anthropic adapter's prompt-cache mark is) and serialises only what follows. An item
 * that is not the same object but has the same text (the system message, made afresh each time)
 * counts as unchanged. Everything else in the body (model, tools, settings) is serialised every time.
 *
 * The bytes are exactly those of `JSON.stringify(body)` as UTF-8. Objects in the list must not be
 * mutated once encoded (the adapters build each body afresh from immutable lowerings). At most
 * {@link capacity} lists are kept, of at most {@link capacityBytes} together, the least recently
 * continued dropped first.
 */

/**
 * A list made before: the bytes of its items' texts joined by commas, the items, and where each one's
 * text ends in those bytes.
 */
interface Made {
  /**
   * The bytes, at the start of a buffer of the list's own (never one that was sent) with room to
   * spare at its end, so that the list continuing this one is written in place. A buffer belongs to
   * one kept list at a time: the list that continues another takes its buffer over, and the other is
   * forgotten.
   */
  readonly buffer: Uint8Array
  readonly items: ReadonlyArray<unknown>
  readonly ends: ReadonlyArray<number>
  /** The objects it is found by: the last two of its list (the last may be made afresh for each body). */
  readonly keys: ReadonlyArray<object>
}

/** How many lists are kept. */
export const capacity = 32
/** How many bytes of kept lists are kept together, at most. */
export const capacityBytes = 32 * 1024 * 1024
/** How far from a list's end an object a kept body is found by is looked for (a Step adds a few messages). */
const lookBack = 64

/** The kept lists, least recently continued first, and each by the objects it is found by. */
const kept = new Set<Made>()
const byKey = new Map<object, Made>()
let keptBytes = 0

const forget = (entry: Made) => {
  if (!kept.delete(entry)) return
  for (const key of entry.keys) if (byKey.get(key) === entry) byKey.delete(key)
  keptBytes -= entry.buffer.length
}

const keep = (entry: Made) => {
  if (entry.keys.length === 0 || entry.buffer.length > capacityBytes) return
  for (const key of entry.keys) {
    const other = byKey.get(key)
    if (other !== undefined) forget(other)
  }
  kept.add(entry)
  for (const key of entry.keys) byKey.set(key, entry)
  keptBytes += entry.buffer.length
  for (const oldest of kept) {
    if (kept.size <= capacity && keptBytes <= capacityBytes) break
    forget(oldest)
  }
}

/** The last two objects of `list`. */
const keysOf = (list: ReadonlyArray<unknown>): ReadonlyArray<object> => {
  const keys: Array<object> = []
  for (let index = list.length - 1; index >= 0 && keys.length < 2; index--) {
    const item = list[index]
    if (typeof item === "object" && item !== null) keys.push(item)
  }
  return keys
}

const utf8 = new TextEncoder()

/** A list item's JSON text (in a list, what JSON has no text for is `null`). */
const itemText = (item: unknown): string => JSON.stringify(item) ?? "null"

/**
 * The kept body whose list `list` continues, how many of its items are unchanged, and the text of the
 * first changed item when it was made to compare it.
 */
const continued = (
  list: ReadonlyArray<unknown>
): { readonly from: Made; readonly same: number; readonly changed?: string } | undefined => {
  for (let index = list.length - 1; index >= 0 && index >= list.length - lookBack; index--) {
    const item = list[index]
    if (typeof item !== "object" || item === null) continue
    const from = byKey.get(item)
    if (from === undefined) continue
    let same = 0
    let changed: string | undefined
    while (same < from.items.length && same < list.length) {
      const before = from.items[same]
      const now = list[same]
      if (before !== now) {
        const text = itemText(now)
        const start = same === 0 ? 0 : from.ends[same - 1]! + 1
        if (!Buffer.from(text).equals(from.buffer.subarray(start, from.ends[same]!))) {
          changed = text
          break
        }
      }
      same++
    }
    if (same === 0) return undefined
    return changed === undefined ? { from, same } : { from, same, changed }
  }
  return undefined
}

/**
 * The UTF-8 bytes of `JSON.stringify(body)`. When `listKey` names a list of `body`, that list is made
 * incrementally (see the module doc).
 */
export const encode = (body: unknown, listKey?: string): Uint8Array => {
  const whole = () => utf8.encode(JSON.stringify(body))
  if (listKey === undefined || typeof body !== "object" || body === null || Array.isArray(body) || "toJSON" in body) {
    return whole()
  }
  const list = (body as Record<string, unknown>)[listKey]
  if (!Array.isArray(list) || list.length === 0) return whole()
  // The fields before the list and after it, as JSON.stringify writes them.
  const before: Array<string> = []
  const after: Array<string> = []
  let seen = false
  for (const [key, value] of Object.entries(body)) {
    if (key === listKey) {
      seen = true
      continue
    }
    const text = JSON.stringify(value)
    if (text !== undefined) (seen ? after : before).push(`${JSON.stringify(key)}:${text}`)
  }
  const head = utf8.encode(`{${[...before, ""].join(",")}${JSON.stringify(listKey)}:[`)
  const tail = utf8.encode(`]${after.map((field) => `,${field}`).join("")}}`)
  const found = continued(list)
  const same = found?.same ?? 0
  const reusedLength = found === undefined ? 0 : found.from.ends[same - 1]!
  const texts = Array.from(list.slice(same), (item, index) =>
    index === 0 && found?.changed !== undefined ? found.changed : itemText(item)
  )
  const added = utf8.encode((same > 0 && texts.length > 0 ? "," : "") + texts.join(","))
  const length = reusedLength + added.length
  // The list's bytes go after the reused ones in the buffer it continues, or into a new one (twice the
  // size needed, so that the next few lists fit): a large buffer new at every Step would cost its
  // pages' first touch each time.
  const buffer =
    found !== undefined && found.from.buffer.length >= length
      ? found.from.buffer
      : new Uint8Array(Math.max(2 * length, 4096))
  if (found !== undefined && buffer !== found.from.buffer) buffer.set(found.from.buffer.subarray(0, reusedLength))
  buffer.set(added, reusedLength)
  // The body is a copy: what was sent is never written again.
  const bytes = Buffer.allocUnsafe(head.length + length + tail.length)
  bytes.set(head, 0)
  bytes.set(buffer.subarray(0, length), head.length)
  bytes.set(tail, head.length + length)
  // Where each item's text ends: those reused as they were, then the new ones.
  const ends: Array<number> = found === undefined ? [] : found.from.ends.slice(0, same)
  let end = reusedLength
  for (const [index, text] of texts.entries()) {
    end += (same + index > 0 ? 1 : 0) + Buffer.byteLength(text)
    ends.push(end)
  }
  if (found !== undefined) forget(found.from)
  keep({ buffer, items: list, ends, keys: keysOf(list) })
  return bytes
}
