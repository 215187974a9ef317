/**
 * Small statistics helpers of the benchmark suite: pure functions, no I/O.
 */

/** The p-th percentile (0..100) of `xs` by linear interpolation between closest ranks; NaN when empty. */
export function percentile(xs: readonly number[] | Float64Array, p: number): number {
  const n = xs.length
  if (n === 0) return NaN
  const sorted = Float64Array.from(xs).sort()
  return percentileSorted(sorted, p)
}

/** Like percentile(), for an already ascending array. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length
  if (n === 0) return NaN
  if (n === 1) return sorted[0] as number
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (n - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  const a = sorted[lo] as number
  const b = sorted[hi] as number
  return a + (b - a) * (rank - lo)
}

export function median(xs: readonly number[]): number {
  return percentile(xs, 50)
}

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) return NaN
  let s = 0
  for (const x of xs) s += x
  return s / xs.length
}

/** Median and range of repeated measurements of one quantity. */
export interface Summary {
  readonly n: number
  readonly median: number
  readonly min: number
  readonly max: number
  /** (max - min) / median, as a fraction; 0 for a single run. */
  readonly spread: number
}

export function summarize(xs: readonly number[]): Summary {
  const finite = xs.filter((x) => Number.isFinite(x))
  if (finite.length === 0) return { n: 0, median: NaN, min: NaN, max: NaN, spread: NaN }
  const med = median(finite)
  const min = Math.min(...finite)
  const max = Math.max(...finite)
  return { n: finite.length, median: med, min, max, spread: med === 0 ? 0 : (max - min) / Math.abs(med) }
}

/** A number with about 3 significant digits and thousands separators: 1,234,567 / 12.3 / 0.123. */
export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return 'n/a'
  const ax = Math.abs(x)
  if (ax >= 10 ** digits) return Math.round(x).toLocaleString('en-US')
  if (ax === 0) return '0'
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(ax)))
  return x.toFixed(Math.min(decimals, 6))
}

/** "median (min–max, ±s%)" of a summary, each value formatted by `f`. */
export function fmtSummary(s: Summary, f: (x: number) => string = (x) => fmt(x)): string {
  if (s.n === 0) return 'n/a'
  if (s.n === 1) return f(s.median)
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`
}

/** Spread of a summary as "±x%" (half the range over the median). */
export function fmtSpread(s: Summary): string {
  if (s.n < 2 || !Number.isFinite(s.spread)) return '–'
  return `±${((s.spread / 2) * 100).toFixed(1)}%`
}

/** ratio rostore ÷ peer, formatted "1.23×"; "n/a" when either side is missing. */
export function fmtRatio(ours: number, peer: number): string {
  const r = ours / peer
  return Number.isFinite(r) && peer > 0 ? `${r.toFixed(2)}×` : 'n/a'
}

/** A markdown table from a header row and rows of cells. */
export function mdTable(header: readonly string[], rows: readonly (readonly string[])[], align?: readonly ('l' | 'r')[]): string {
  const sep = header.map((_, i) => ((align?.[i] ?? (i === 0 ? 'l' : 'r')) === 'r' ? '---:' : '---'))
  const line = (cells: readonly string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`
  return [line(header), `|${sep.join('|')}|`, ...rows.map(line)].join('\n')
}
