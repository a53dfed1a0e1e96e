export * as TerminalStyle from "./terminal-style.js"

/**
 * Colour and cursor control for CLI output: on only when the stream is a terminal, `NO_COLOR` is
 * unset or empty, and `TERM` is not `dumb`. Off, every styling function returns its text unchanged,
 * so piped output holds no ESC byte.
 */
export interface Style {
  readonly ansi: boolean
  readonly dim: (text: string) => string
  readonly bold: (text: string) => string
  readonly red: (text: string) => string
  readonly green: (text: string) => string
  readonly yellow: (text: string) => string
  readonly cyan: (text: string) => string
}

/** Whether `stream` gets ANSI sequences under `env` (see the module doc). */
export const enabled = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>>
): boolean => stream.isTTY === true && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

const wrap = (on: boolean, open: number, close: number) => (text: string) =>
  on && text !== "" ? `\u001b[${open}m${text}\u001b[${close}m` : text

export const make = (ansi: boolean): Style => ({
  ansi,
  dim: wrap(ansi, 2, 22),
  bold: wrap(ansi, 1, 22),
  red: wrap(ansi, 31, 39),
  green: wrap(ansi, 32, 39),
  yellow: wrap(ansi, 33, 39),
  cyan: wrap(ansi, 36, 39)
})

/** Erases the current line and returns to its start (only meaningful when ANSI is on). */
export const eraseLine = "\r\u001b[2K"
