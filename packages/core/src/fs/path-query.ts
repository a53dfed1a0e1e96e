export * as PathQuery from "./path-query.js"

/**
 * How a find query ranks paths (relative, `/`-separated). Pure.
 *
 * The query is split on whitespace into terms; a path matches when every term matches it, case
 * insensitively. A term matches, best first, as: the whole file name; the start of the file name;
 * inside the file name; inside the path at a segment start; inside the path; and last as a
 * subsequence (its characters in order, gaps allowed: `lcf` matches `location-files.ts`), scored by
 * how tight the match is. An empty query matches every path with the same score, so the tie-break
 * decides: shorter paths first, then code-unit order.
 */

/** A term's score by how it matched (subsequence scores are below `inPath`). */
const weight = { name: 1000, nameStart: 800, inName: 600, segmentStart: 500, inPath: 400 } as const

/** The terms of a query: lower-cased, split on whitespace. */
export const terms = (query: string): ReadonlyArray<string> =>
  query
    .toLowerCase()
    .split(/\s+/)
    .filter((term) => term !== "")

/** A subsequence match's score in `[1, 300]`: 300 minus the characters skipped between matched ones. */
const subsequence = (term: string, target: string): number | undefined => {
  let at = target.indexOf(term[0]!)
  if (at < 0) return undefined
  let gaps = 0
  for (let index = 1; index < term.length; index++) {
    const next = target.indexOf(term[index]!, at + 1)
    if (next < 0) return undefined
    gaps += next - at - 1
    at = next
  }
  return Math.max(1, 300 - gaps)
}

const termScore = (term: string, lowerPath: string, lowerName: string): number | undefined => {
  if (lowerName === term) return weight.name
  if (lowerName.startsWith(term)) return weight.nameStart
  if (lowerName.includes(term)) return weight.inName
  if (lowerPath.startsWith(term) || lowerPath.includes(`/${term}`)) return weight.segmentStart
  if (lowerPath.includes(term)) return weight.inPath
  return subsequence(term, lowerPath)
}

/** The score of `relativePath` for the query's `terms` (higher is better), or `undefined` when it does not match. */
export const score = (queryTerms: ReadonlyArray<string>, relativePath: string): number | undefined => {
  const lowerPath = relativePath.toLowerCase()
  const lowerName = lowerPath.slice(lowerPath.lastIndexOf("/") + 1)
  let total = 0
  for (const term of queryTerms) {
    const value = termScore(term, lowerPath, lowerName)
    if (value === undefined) return undefined
    total += value
  }
  return total
}

/** A ranked path. */
export interface Ranked<A> {
  readonly score: number
  readonly path: string
  readonly value: A
}

/** Orders ranked paths best first: higher score, then shorter path, then code-unit order. Pure. */
export const compare = <A>(a: Ranked<A>, b: Ranked<A>): number =>
  b.score - a.score || a.path.length - b.path.length || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

/**
 * The best `limit` of what is offered, in {@link compare} order, in memory bounded by `limit`: a
 * sorted buffer that drops what ranks below its last entry once full.
 */
export const top = <A>(limit: number) => {
  const kept: Array<Ranked<A>> = []
  return {
    offer: (item: Ranked<A>): void => {
      if (kept.length >= limit && compare(item, kept[kept.length - 1]!) >= 0) return
      let low = 0
      let high = kept.length
      while (low < high) {
        const middle = (low + high) >>> 1
        if (compare(kept[middle]!, item) <= 0) low = middle + 1
        else high = middle
      }
      kept.splice(low, 0, item)
      if (kept.length > limit) kept.pop()
    },
    result: (): ReadonlyArray<Ranked<A>> => kept
  }
}
