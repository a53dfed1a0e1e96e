export * as BinaryFile from "./binary-file.js"

import * as path from "node:path"

/** Extensions of formats that are never text: read refuses them and grep skips them unopened. */
const extensions = new Set([
  ".7z",
  ".a",
  ".bin",
  ".bz2",
  ".class",
  ".dat",
  ".db",
  ".dll",
  ".doc",
  ".docx",
  ".dylib",
  ".eot",
  ".exe",
  ".gz",
  ".ico",
  ".jar",
  ".lib",
  ".mp3",
  ".mp4",
  ".o",
  ".obj",
  ".odp",
  ".ods",
  ".odt",
  ".otf",
  ".ppt",
  ".pptx",
  ".pyc",
  ".pyo",
  ".rar",
  ".so",
  ".sqlite",
  ".tar",
  ".tgz",
  ".ttf",
  ".war",
  ".wasm",
  ".woff",
  ".woff2",
  ".xls",
  ".xlsx",
  ".xz",
  ".zip",
  ".zst"
])

/** Whether the file name alone says the content is binary. Pure. */
export const hasBinaryExtension = (file: string): boolean => extensions.has(path.extname(file).toLowerCase())

/** How many leading bytes `looksBinary` needs. */
export const sampleSize = 4096

/**
 * Whether a file's leading bytes look binary: a NUL byte, or more than 30% control characters other
 * than whitespace (bytes ≥ 0x80 count as text, so UTF-8 passes). An empty sample is text. Pure.
 */
export const looksBinary = (sample: Uint8Array): boolean => {
  if (sample.length === 0) return false
  let control = 0
  for (const byte of sample) {
    if (byte === 0) return true
    if (byte < 9 || (byte > 13 && byte < 32)) control++
  }
  return control / sample.length > 0.3
}
