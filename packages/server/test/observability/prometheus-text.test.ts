import { describe, expect, it } from "@effect/vitest"
import { Effect, Metric, MetricBoundaries } from "effect"
import { PrometheusText } from "../../src/observability/prometheus-text.js"

// Each test names its metrics uniquely (the registry is process-wide) and renders only their pairs.
const only = (prefix: string) =>
  Effect.map(Metric.snapshot, (pairs) => pairs.filter((pair) => pair.metricKey.name.startsWith(prefix)))

describe("PrometheusText.render", () => {
  it.effect("writes HELP and TYPE once per family, then every series with its labels", () =>
    Effect.gen(function* () {
      const counter = Metric.counter("t1_requests_total", { description: "Requests.", incremental: true })
      yield* Metric.incrementBy(Metric.tagged(counter, "route", "/a"), 2)
      yield* Metric.increment(Metric.tagged(counter, "route", "/b"))
      const gauge = Metric.gauge("t1_open")
      yield* Metric.incrementBy(gauge, 3)
      yield* Metric.incrementBy(gauge, -1)
      const text = PrometheusText.render(yield* only("t1_"))
      expect(text).toBe(
        [
          "# TYPE t1_open gauge",
          "t1_open 2",
          "# HELP t1_requests_total Requests.",
          "# TYPE t1_requests_total counter",
          't1_requests_total{route="/a"} 2',
          't1_requests_total{route="/b"} 1',
          ""
        ].join("\n")
      )
    })
  )

  it.effect("renders a histogram's cumulative buckets up to +Inf, its sum and its count", () =>
    Effect.gen(function* () {
      const histogram = Metric.histogram("t2_seconds", MetricBoundaries.fromIterable([0.1, 1]), "Latency.")
      const tagged = histogram.pipe(Metric.tagged("tool", "read"))
      for (const value of [0.05, 0.5, 0.7, 3]) yield* Metric.update(tagged, value)
      expect(PrometheusText.render(yield* only("t2_"))).toBe(
        [
          "# HELP t2_seconds Latency.",
          "# TYPE t2_seconds histogram",
          't2_seconds_bucket{tool="read",le="0.1"} 1',
          't2_seconds_bucket{tool="read",le="1"} 3',
          't2_seconds_bucket{tool="read",le="+Inf"} 4',
          't2_seconds_sum{tool="read"} 4.25',
          't2_seconds_count{tool="read"} 4',
          ""
        ].join("\n")
      )
    })
  )

  it.effect("escapes label values and HELP text, and replaces characters names cannot hold", () =>
    Effect.gen(function* () {
      const counter = Metric.counter("t3.odd-name", { description: "A \\ and a\nnewline.", incremental: true })
      yield* Metric.increment(Metric.tagged(counter, "the-path", 'C:\\dir "x"\nnext'))
      expect(PrometheusText.render(yield* only("t3."))).toBe(
        [
          "# HELP t3_odd_name A \\\\ and a\\nnewline.",
          "# TYPE t3_odd_name counter",
          't3_odd_name{the_path="C:\\\\dir \\"x\\"\\nnext"} 1',
          ""
        ].join("\n")
      )
    })
  )

  it.effect("renders summaries and frequencies, and leaves out a series whose type conflicts with its family", () =>
    Effect.gen(function* () {
      const summary = Metric.summary({
        name: "t4_size",
        maxAge: "1 minute",
        maxSize: 10,
        error: 0,
        quantiles: [0.5]
      })
      for (const value of [1, 2, 3]) yield* Metric.update(summary, value)
      yield* Metric.update(Metric.frequency("t4_kinds"), "a")
      yield* Metric.update(Metric.frequency("t4_kinds"), "a")
      // Same name as the summary, another type: not rendered.
      yield* Metric.incrementBy(Metric.gauge("t4_size", { description: "clash" }).pipe(Metric.tagged("x", "y")), 1)
      const text = PrometheusText.render(yield* only("t4_"))
      expect(text).toContain('# TYPE t4_kinds counter\nt4_kinds{value="a"} 2\n')
      expect(text).toContain("# TYPE t4_size summary\n")
      // The quantile's value is Effect's estimate; the line carries whatever the state holds.
      expect(text).toMatch(/\nt4_size\{quantile="0\.5"\} [123]\n/)
      expect(text).toContain("t4_size_sum 6\nt4_size_count 3\n")
      expect(text).not.toContain("clash")
      expect(text).not.toContain('x="y"')
    })
  )

  it("formats the infinities, NaN and bigints as the format wants them", () => {
    expect(PrometheusText.formatValue(Number.POSITIVE_INFINITY)).toBe("+Inf")
    expect(PrometheusText.formatValue(Number.NEGATIVE_INFINITY)).toBe("-Inf")
    expect(PrometheusText.formatValue(Number.NaN)).toBe("NaN")
    expect(PrometheusText.formatValue(12345678901234567890n)).toBe("12345678901234567890")
    expect(PrometheusText.render([])).toBe("")
  })
})
