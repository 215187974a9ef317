import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../../common/paths'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * deploy/grafana/rostore.json is a dashboard Grafana can import, and every metric its
 * PromQL names is one a real node exports (compared with a real /metrics scrape), so a
 * renamed metric cannot leave an empty panel behind.
 */
jest.setTimeout(60_000)
const DASHBOARD = join(packageRoot(__dirname), 'deploy', 'grafana', 'rostore.json')
const tmp = makeTmp('rostore-grafana-')
let node: NodeProcess | undefined

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

interface Panel {
  id: number
  type: string
  title: string
  datasource?: { type: string; uid: string }
  gridPos: { x: number; y: number; w: number; h: number }
  targets: { refId: string; expr: string }[]
}

/** Series Prometheus makes itself, not the node. */
const SYNTHETIC = new Set(['up'])
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset'])

/** The metric names a PromQL expression reads (not functions, keywords, labels or durations). */
function metricNames(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const out: string[] = []
  for (const m of e.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    if (
      e
        .slice(m.index + m[0].length)
        .trimStart()
        .startsWith('(')
    )
      continue
    if (!KEYWORDS.has(m[0])) out.push(m[0])
  }
  return out
}

/** Names a scrape exposes: its samples, and every family's series (a histogram's _bucket, _sum, _count). */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line)
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string]
      names.add(name)
      if (kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s)
      if (kind === 'summary') for (const s of ['_sum', '_count']) names.add(name + s)
    } else if (line !== '' && !line.startsWith('#')) {
      names.add(line.split(/[ {]/)[0] as string)
    }
  }
  return names
}

test('the metric-name reader finds metrics and skips functions, labels, ranges and groupings', () => {
  expect(metricNames('sum by (instance, le) (rate(a_bucket{op=~"get|x"}[$__rate_interval])) / on (instance) b_total')).toEqual([
    'a_bucket',
    'b_total',
  ])
  expect(metricNames('histogram_quantile(0.99, rate(c[5m])) > bool 1')).toEqual(['c'])
})

test('the dashboard is valid JSON Grafana can import: unique panel ids, a data source and queries on every panel', () => {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    title: string
    uid: string
    panels: Panel[]
    templating: { list: { name: string }[] }
  }
  expect(d.title).toBe('rostore')
  expect(d.uid).toMatch(/^[a-z0-9-]{1,40}$/)
  expect(d.templating.list.map((v) => v.name)).toContain('datasource')
  expect(new Set(d.panels.map((p) => p.id)).size).toBe(d.panels.length)
  for (const p of d.panels) {
    expect({ title: p.title, ds: p.datasource }).toEqual({ title: p.title, ds: { type: 'prometheus', uid: '${datasource}' } })
    expect(p.targets.length).toBeGreaterThan(0)
    expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24)
  }
  // The panels on-call opens first.
  const titles = d.panels.map((p) => p.title)
  for (const t of [
    'Read rate',
    'Read latency p99',
    'Errors',
    'Live version per node',
    'Fetch progress',
    'Disk free',
    'Cold-read hit ratio',
  ])
    expect(titles).toContain(t)
})

test('every metric the dashboard queries is exported by a real node', async () => {
  node = await startSingleNode({ dir: tmp.dir, workers: 1, extraArgs: ['--resp-port', '0'] })
  const r = await node.request('/metrics')
  expect(r.status).toBe(200)
  const exposed = exposedNames(r.body.toString())
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
  const used = new Set(d.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr))))
  expect(used.size).toBeGreaterThan(15)
  const missing = [...used].filter((n) => !exposed.has(n) && !SYNTHETIC.has(n))
  expect(missing).toEqual([])
})
