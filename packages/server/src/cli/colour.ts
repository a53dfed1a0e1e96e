export * as Colour from "./colour.js"

/**
 * Whether text written to a stream may carry colour (ANSI escape sequences): only when the stream is
 * a terminal and `NO_COLOR` is unset or empty (https://no-color.org). Piped or redirected output, and
 * any output with `NO_COLOR=1`, is plain.
 */
export const enabled = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "")

/** Whether stdout and stderr may carry colour, each as {@link enabled} decides. */
export interface Streams {
  readonly stdout: boolean
  readonly stderr: boolean
}

/** The decision for this process's stdout and stderr. */
export const ofProcess = (): Streams => ({ stdout: enabled(process.stdout), stderr: enabled(process.stderr) })

// CSI sequences (colours, cursor moves) and OSC sequences (titles, links), as a renderer writes them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
const escapes = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g

/** `text` without its ANSI escape sequences. */
export const strip = (text: string): string => text.replace(escapes, "")
