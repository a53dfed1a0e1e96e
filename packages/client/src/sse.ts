/**
 * The Promise client's Server-Sent Events parser: the event stream interpretation of the HTML
 * standard (§9.2.6), reduced to what the client reads, an event's `event:` name and its `data`.
 *
 * Lines end at CRLF, LF or CR (a CR at the end of the text fed so far is held back until the next
 * chunk says whether an LF follows). A line starting with `:` is a comment; otherwise the field name
 * is the text before the first `:` (the whole line without one) and the value the text after it, less
 * one leading space. `data` lines are joined with LF; `event` names the event; `id`, `retry` and
 * unknown fields are ignored (the client never reconnects: resuming is the caller's). A blank line
 * dispatches the event when it had at least one `data` line, then starts a new one; an event that the
 * stream ends before its blank line is dropped. A byte order mark is the decoder's to strip.
 *
 * It replaces `eventsource-parser` (3.4 kB minified, a third of the client's size budget) and is
 * checked against it by a differential property test (`test/sse.test.ts`): same events for any text,
 * however chunked. (Where a chunk ends in a CR, this parser settles it with the next chunk; the library
 * waits for a later line break.) Feeding is linear in the input: a chunk without a line break is only
 * appended.
 */
export const parser = (onEvent: (event: string | undefined, data: string) => void): ((chunk: string) => void) => {
  let pending = ""
  /** `pending` ends with a CR: the next chunk says whether an LF follows. */
  let held = false
  let event: string | undefined
  let data: string | undefined
  return (chunk) => {
    pending += chunk
    // Nothing to split unless the chunk has a line break or settles a held-back CR: appending is
    // cheap, splitting walks the whole pending text.
    if (!held && !/[\r\n]/.test(chunk)) return
    // A CR at the very end is held back: an LF may follow in the next chunk.
    const lines = pending.split(/\r\n|\r(?!$)|\n/)
    pending = lines.pop() as string
    held = pending.endsWith("\r")
    for (const line of lines) {
      if (line) {
        const [, field, value] = /^([^:]*):? ?(.*)$/s.exec(line) as unknown as [string, string, string]
        if (field === "data") data = data === undefined ? value : `${data}\n${value}`
        else if (field === "event") event = value || undefined
      } else {
        if (data !== undefined) onEvent(event, data)
        event = data = undefined
      }
    }
  }
}
