import { createParser } from "eventsource-parser"
import fc from "fast-check"
import { describe, expect, it, vi } from "vitest"
import { parser } from "../src/sse.js"

/*
 * The Promise client's own SSE parser (src/sse.ts), checked against `eventsource-parser` as the
 * oracle: for any stream text, cut into chunks anywhere, this parser dispatches the events (name and
 * data, in order) that the oracle dispatches for the whole text.
 */

type Dispatched = ReadonlyArray<readonly [event: string | undefined, data: string]>

const ours = (chunks: ReadonlyArray<string>): Dispatched => {
  const out: Array<readonly [string | undefined, string]> = []
  const feed = parser((event, data) => out.push([event, data]))
  for (const chunk of chunks) feed(chunk)
  return out
}

const oracle = (chunks: ReadonlyArray<string>): Dispatched => {
  const out: Array<readonly [string | undefined, string]> = []
  const oracleParser = createParser({ onEvent: ({ event, data }) => out.push([event, data]) })
  for (const chunk of chunks) oracleParser.feed(chunk)
  return out
}

/** `text` cut at the given offsets (sorted, deduplicated, within the text). */
const cut = (text: string, offsets: ReadonlyArray<number>): Array<string> => {
  const at = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<string> = []
  let from = 0
  for (const to of at) {
    chunks.push(text.slice(from, to))
    from = to
  }
  chunks.push(text.slice(from))
  return chunks
}

const frame = (seq: number) => `id: ${seq}\nevent: session.next.synthetic\ndata: {"seq":${seq}}\n\n`

describe("the Promise client's SSE parser", () => {
  it("dispatches named events and joins data lines; comments, ids, retry and unknown fields are skipped", () => {
    const text =
      ": heartbeat\n\n" +
      frame(1) +
      "data: a\ndata:b\ndata:  c\n\n" +
      "retry: 10\nfoo: bar\nid\ndata\n\n" +
      "event: effect/httpapi/stream/failure\ndata: [1]\n\n" +
      "event: x\n\n" +
      "data: {}\n\n" +
      "data: dropped at the end"
    expect(ours([text])).toEqual([
      ["session.next.synthetic", '{"seq":1}'],
      [undefined, "a\nb\n c"],
      [undefined, ""],
      ["effect/httpapi/stream/failure", "[1]"],
      [undefined, "{}"]
    ])
    expect(ours([text])).toEqual(oracle([text]))
  })

  it("accepts CRLF, CR and LF line ends, also split between chunks", () => {
    expect(ours(["data: 1\r", "\n\r", "\ndata: 2\r\r", "data: 3\n", "\n"])).toEqual([
      [undefined, "1"],
      [undefined, "2"],
      [undefined, "3"]
    ])
  })

  it("appends chunks without a line break and splits only when one arrives (feeding stays linear)", () => {
    const data = "x".repeat(1_000_000)
    const chunks = cut(
      `data: ${data}\n\n`,
      Array.from({ length: 9_999 }, (_, i) => (i + 1) * 100)
    )
    const split = vi.spyOn(String.prototype, "split")
    try {
      expect(ours(chunks)).toEqual([[undefined, data]])
      expect(split).toHaveBeenCalledTimes(1)
    } finally {
      split.mockRestore()
    }
    // A CR ending a chunk is settled by the next chunk, line break or not.
    expect(ours(["data: a\r", "\r", "x"])).toEqual([[undefined, "a"]])
  })

  it("property: agrees with eventsource-parser on any stream, however this parser gets it chunked", () => {
    const piece = fc.constantFrom(
      "data",
      "data:",
      "data: ",
      "event",
      "event:",
      "event: ",
      "id: 7",
      "retry: 5",
      "retry: x",
      ":",
      ": comment",
      "foo",
      ":x",
      " ",
      "  ",
      "{}",
      '{"a":1}',
      "é€😀",
      "\u0000",
      "\n",
      "\n",
      "\r",
      "\r\n",
      "\n\n",
      "\r\r",
      "\r\n\r\n"
    )
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 12 }), (pieces, offsets) => {
        const text = pieces.join("")
        const chunks = cut(text, offsets)
        // The oracle reads the text whole: chunked, it holds a CR ending one chunk until a later chunk
        // brings a line break (so "data:\n\r" then "data" dispatches nothing yet, and nothing at all if
        // the stream ends there); this parser settles the CR with the very next chunk.
        expect(ours(chunks)).toEqual(oracle([text]))
      }),
      { seed: 18, numRuns: 3000 }
    )
  })
})
