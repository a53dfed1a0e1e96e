export * as SampleFiles from "./sample-files.js"

/** Small real files for tests that attach or read them. */

/** A real 1×1 PNG. */
export const png: Buffer = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64"
)
