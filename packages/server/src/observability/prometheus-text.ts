export * as PrometheusText from "./prometheus-text.js"

/**
 * The Prometheus text exposition format (version 0.0.4) of a snapshot of Effect's metric registry
 * (`Metric.snapshot`). Pure.
 *
 * ```
 * # HELP opencode_tool_duration_seconds Duration of each tool call …
 * # TYPE opencode_tool_duration_seconds histogram
 * opencode_tool_duration_seconds_bucket{tool="read",outcome="success",le="0.005"} 3
 * …                                                     (cumulative counts, ascending le)
 * opencode_tool_duration_seconds_bucket{tool="read",outcome="success",le="+Inf"} 4
 * opencode_tool_duration_seconds_sum{tool="read",outcome="success"} 0.0123
 * opencode_tool_duration_seconds_count{tool="read",outcome="success"} 4
 * ```
 *
 * - One family per metric name: a `# HELP` line (when the metric has a description) and a `# TYPE`
 *   line, then every series of that name. Families are sorted by name; a series whose type differs
 *   from its family's first one is left out rather than making the exposition invalid.
 * - Counter → `counter`, gauge → `gauge`, histogram → `histogram` (Effect's buckets are already
 *   cumulative; a `+Inf` bucket equal to the count is always present), summary → `summary`
 *   (`quantile` series, `_sum`, `_count`), frequency → `counter` with the occurrence in a `value` label.
 * - Names outside `[a-zA-Z_:][a-zA-Z0-9_:]*` (labels: no `:`) have each other character replaced by
 *   `_`. Label values escape `\`, `"` and newlines; HELP texts escape `\` and newlines.
 */

import { MetricKeyType, type MetricPair, MetricState, Option } from "effect"

/** The `Content-Type` of the exposition. */
export const contentType = "text/plain; version=0.0.4; charset=utf-8"

type Label = readonly [name: string, value: string]

const metricName = (name: string): string => {
  const clean = name.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[a-zA-Z_:]/.test(clean) ? clean : `_${clean}`
}

const labelName = (name: string): string => {
  const clean = name.replace(/[^a-zA-Z0-9_]/g, "_")
  return /^[a-zA-Z_]/.test(clean) ? clean : `_${clean}`
}

const escapeLabelValue = (value: string): string =>
  value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

const escapeHelp = (text: string): string => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A sample value: Go's float syntax for the infinities and NaN, integers and floats as JavaScript writes them. */
export const formatValue = (value: number | bigint): string => {
  if (typeof value === "bigint") return value.toString()
  if (Number.isNaN(value)) return "NaN"
  if (value === Number.POSITIVE_INFINITY) return "+Inf"
  if (value === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(value)
}

const sample = (name: string, labels: ReadonlyArray<Label>, value: number | bigint): string => {
  const rendered =
    labels.length === 0 ? "" : `{${labels.map(([key, val]) => `${key}="${escapeLabelValue(val)}"`).join(",")}}`
  return `${name}${rendered} ${formatValue(value)}`
}

type Kind = "counter" | "gauge" | "histogram" | "summary"

const kindOf = (pair: MetricPair.MetricPair.Untyped): Kind | undefined => {
  const keyType = pair.metricKey.keyType
  if (MetricKeyType.isCounterKey(keyType) || MetricKeyType.isFrequencyKey(keyType)) return "counter"
  if (MetricKeyType.isGaugeKey(keyType)) return "gauge"
  if (MetricKeyType.isHistogramKey(keyType)) return "histogram"
  if (MetricKeyType.isSummaryKey(keyType)) return "summary"
  return undefined
}

/** The sample lines of one series. */
const samples = (name: string, labels: ReadonlyArray<Label>, state: unknown): ReadonlyArray<string> => {
  if (MetricState.isCounterState(state)) return [sample(name, labels, state.count)]
  if (MetricState.isGaugeState(state)) return [sample(name, labels, state.value)]
  if (MetricState.isFrequencyState(state)) {
    return [...state.occurrences].map(([value, count]) => sample(name, [...labels, ["value", value]], count))
  }
  if (MetricState.isHistogramState(state)) {
    const lines: Array<string> = []
    let sawInfinity = false
    for (const [boundary, count] of state.buckets) {
      if (boundary === Number.POSITIVE_INFINITY) sawInfinity = true
      lines.push(sample(`${name}_bucket`, [...labels, ["le", formatValue(boundary)]], count))
    }
    if (!sawInfinity) lines.push(sample(`${name}_bucket`, [...labels, ["le", "+Inf"]], state.count))
    lines.push(sample(`${name}_sum`, labels, state.sum), sample(`${name}_count`, labels, state.count))
    return lines
  }
  if (MetricState.isSummaryState(state)) {
    const lines: Array<string> = []
    for (const [quantile, value] of state.quantiles) {
      if (Option.isSome(value)) lines.push(sample(name, [...labels, ["quantile", formatValue(quantile)]], value.value))
    }
    lines.push(sample(`${name}_sum`, labels, state.sum), sample(`${name}_count`, labels, state.count))
    return lines
  }
  return []
}

/** Renders a registry snapshot (`Metric.unsafeSnapshot()` or `yield* Metric.snapshot`); ends with a newline. */
export const render = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, { kind: Kind; help: Option.Option<string>; lines: Array<string> }>()
  for (const pair of pairs) {
    const kind = kindOf(pair)
    if (kind === undefined) continue
    const name = metricName(pair.metricKey.name)
    const family = families.get(name) ?? { kind, help: pair.metricKey.description, lines: [] }
    if (family.kind !== kind) continue
    families.set(name, family)
    if (Option.isNone(family.help)) family.help = pair.metricKey.description
    const labels = pair.metricKey.tags.map((tag): Label => [labelName(tag.key), tag.value])
    family.lines.push(...samples(name, labels, pair.metricState))
  }
  const out: Array<string> = []
  for (const [name, family] of [...families].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (Option.isSome(family.help)) out.push(`# HELP ${name} ${escapeHelp(family.help.value)}`)
    out.push(`# TYPE ${name} ${family.kind}`, ...family.lines)
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}
