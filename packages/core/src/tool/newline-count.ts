/**
 * Counting newlines (byte 0x0a) in UTF-8 bytes, fast: the Bounder counts every byte of a tool's
 * output, and a JavaScript loop (or one `indexOf` call per line) costs more than writing the bytes
 * to a file. Large inputs are counted 16 bytes at a time by a tiny WebAssembly SIMD function; where
 * WebAssembly SIMD is not available, by `indexOf`. Both give the same count (tested against each
 * other); the result never depends on which one ran.
 */

// The module, assembled by hand (no toolchain), equivalent to this text format:
//
//   (module
//     (memory (export "memory") 2)                       ;; 128 KiB: one slice of SLICE bytes
//     (func (export "count") (param $len i32) (result i32)
//       (local $i i32) (local $n i32) (local $end i32)
//       (local.set $end (i32.and (local.get $len) (i32.const -16)))   ;; whole 16-byte blocks only
//       (block $done
//         (loop $next
//           (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
//           (local.set $n (i32.add (local.get $n)
//             (i32.popcnt (i8x16.bitmask (i8x16.eq (v128.load (local.get $i)) (i8x16.splat (i32.const 10)))))))
//           (local.set $i (i32.add (local.get $i) (i32.const 16)))
//           (br $next)))
//       (local.get $n)))
// biome-ignore format: one line per part of the module
const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, // type section: (i32) -> i32
  0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
  0x05, 0x03, 0x01, 0x00, 0x02, // memory section: min 2 pages
  0x07, 0x12, 0x02, // export section, 2 exports
  0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, // "memory": memory 0
  0x05, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x00, 0x00, // "count": function 0
  0x0a, 0x39, 0x01, // code section (57 bytes), 1 body
  0x37, // body size (55)
  0x01, 0x03, 0x7f, // locals: 3 × i32
  0x20, 0x00, 0x41, 0x70, 0x71, 0x21, 0x03, // end = len & -16
  0x02, 0x40, 0x03, 0x40, // block, loop
  0x20, 0x01, 0x20, 0x03, 0x4f, 0x0d, 0x01, // br_if done (i >= end)
  0x20, 0x02, // n
  0x20, 0x01, 0xfd, 0x00, 0x04, 0x00, // v128.load i
  0x41, 0x0a, 0xfd, 0x0f, // i8x16.splat 10
  0xfd, 0x23, 0xfd, 0x64, 0x69, 0x6a, 0x21, 0x02, // n += popcnt(bitmask(eq))
  0x20, 0x01, 0x41, 0x10, 0x6a, 0x21, 0x01, // i += 16
  0x0c, 0x00, 0x0b, 0x0b, // br next, end loop, end block
  0x20, 0x02, 0x0b, // n, end
])

const NL = 0x0a
// Bytes counted per call into the module; its memory holds one slice.
const SLICE = 1 << 16
// Below this, copying into the module's memory costs more than it saves.
const SMALL = 512

/** Counts with `indexOf`, one call per newline. */
export const countWithIndexOf = (bytes: Uint8Array, from = 0, to = bytes.length): number => {
  let count = 0
  for (let i = bytes.indexOf(NL, from); i !== -1 && i < to; i = bytes.indexOf(NL, i + 1)) count++
  return count
}

interface Simd {
  readonly memory: Uint8Array
  readonly count: (length: number) => number
}

const instantiate = (): Simd | undefined => {
  try {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(MODULE))
    const memory = new Uint8Array((instance.exports.memory as WebAssembly.Memory).buffer)
    return { memory, count: instance.exports.count as (length: number) => number }
  } catch {
    return undefined // no WebAssembly, or no SIMD
  }
}

const simd = instantiate()

/** Whether the SIMD counter is in use on this runtime. */
export const simdAvailable = simd !== undefined

/** The number of newline bytes in `bytes`. */
export const countNewlines = (bytes: Uint8Array): number => {
  if (simd === undefined || bytes.length < SMALL) return countWithIndexOf(bytes)
  const { memory, count } = simd
  let total = 0
  for (let start = 0; start < bytes.length; start += SLICE) {
    const length = Math.min(SLICE, bytes.length - start)
    memory.set(bytes.subarray(start, start + length))
    total += count(length)
    for (let i = length & ~15; i < length; i++) if (memory[i] === NL) total++
  }
  return total
}
