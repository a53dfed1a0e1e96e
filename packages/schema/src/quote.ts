export * as Quote from "./quote.js"

/**
 * How an error message repeats what a client sent: never more than {@link maxCharacters} characters
 * of it, so a huge field cannot make a huge error (a 50 MB agent name gives a 400 of a few hundred
 * bytes, not of 50 MB). A cut value says how long it was.
 */
export const maxCharacters = 200

/** The first `max` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair. */
const head = (text: string, max: number): string => {
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text.charAt(max - 1)) ? max - 1 : max
  return text.slice(0, end)
}

/** `text` as is when short, else its first {@link maxCharacters} characters, `…` and its length. */
export const clip = (text: string, max: number = maxCharacters): string =>
  text.length <= max ? text : `${head(text, max)}… (${text.length} characters)`

/**
 * `text` as a JSON string literal (`"build"`), cut like {@link clip} when long:
 * `"xxxx…"… (52428800 characters)`.
 */
export const input = (text: string, max: number = maxCharacters): string =>
  text.length <= max ? JSON.stringify(text) : `${JSON.stringify(head(text, max))}… (${text.length} characters)`
