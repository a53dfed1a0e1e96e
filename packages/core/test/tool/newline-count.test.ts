import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { countNewlines, countWithIndexOf, simdAvailable } from "../../src/tool/newline-count.js"

describe("newline counting", () => {
  it("runs the WebAssembly SIMD counter on Node (the fallback is for other runtimes)", () => {
    expect(simdAvailable).toBe(true)
  })

  it("counts exactly what indexOf counts, at every length, offset and density", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 70_000 }),
        fc.integer({ min: 0, max: 31 }),
        fc.integer({ min: 1, max: 200 }),
        fc.integer(),
        (length, offset, every, seed) => {
          const backing = new Uint8Array(length + offset)
          let state = seed | 1
          for (let i = 0; i < backing.length; i++) {
            state = (state * 1103515245 + 12345) | 0
            const r = (state >>> 8) % every
            backing[i] = r === 0 ? 0x0a : 0x80 | (state & 0x7f) // continuation-like bytes, 0x0a-free
          }
          const bytes = backing.subarray(offset)
          expect(countNewlines(bytes)).toBe(countWithIndexOf(bytes))
        }
      ),
      { numRuns: 200 }
    )
  })

  it("counts newlines in the last bytes of a slice and across slice ends, and all-newline input", () => {
    for (const length of [0, 1, 15, 16, 17, 511, 512, 513, 65_535, 65_536, 65_537, 200_003]) {
      const all = new Uint8Array(length).fill(0x0a)
      expect(countNewlines(all)).toBe(length)
      const last = new Uint8Array(length)
      if (length > 0) last[length - 1] = 0x0a
      expect(countNewlines(last)).toBe(length > 0 ? 1 : 0)
      // CRLF: the CR is not a newline, the LF is.
      const crlf = Buffer.from("a\r\n".repeat(length))
      expect(countNewlines(crlf)).toBe(length)
    }
  })
})
