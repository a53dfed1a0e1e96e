/** How numbers read on the page. */

export interface Tokens {
  readonly input: number
  readonly output: number
  readonly reasoning: number
  readonly cache: { readonly read: number; readonly write: number }
}

export const cost = (dollars: number): string => `$${dollars.toFixed(dollars !== 0 && dollars < 0.01 ? 4 : 2)}`

const count = new Intl.NumberFormat("en")

export const tokens = (t: Tokens): string => {
  const parts = [`${count.format(t.input)} in`, `${count.format(t.output)} out`]
  if (t.reasoning > 0) parts.push(`${count.format(t.reasoning)} reasoning`)
  if (t.cache.read + t.cache.write > 0) parts.push(`${count.format(t.cache.read + t.cache.write)} cached`)
  return `${parts.join(" · ")} tokens`
}

export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

export const time = (epochMs: number): string => new Date(epochMs).toLocaleTimeString()

/** At most `max` characters of `text`, saying how much was left out. */
export const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}\n… ${count.format(text.length - max)} more characters`
