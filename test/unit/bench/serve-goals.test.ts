import { serveGoals } from '../../../bench/serve/serve-goals'
import { emptyRow, serverUsPerReq, type Row } from '../../../bench/serve/serve-rows'

/** A row of runs: requests/s, server CPU-seconds per wall second, p99 ms. */
function row(label: string, runs: readonly (readonly [number, number, number])[]): Row {
  const r = emptyRow(label)
  for (const [rps, cpu, p99] of runs) {
    r.rps.push(rps)
    r.keysPerSec.push(rps * (label.includes('multi') || label.includes('MGET') ? 100 : 1))
    r.cpu.push(cpu)
    r.p99.push(p99)
    r.p50.push(p99 / 10)
    r.clientCpu.push(0.5)
  }
  return r
}

const byId = (rows: ReturnType<typeof serveGoals>, id: string): ReturnType<typeof serveGoals>[number] => {
  const g = rows.find((r) => r.id === id)
  if (!g) throw new Error(`no goal ${id}`)
  return g
}

describe('section 3 goal rows', () => {
  test('server µs per request is CPU over rate, median of the runs', () => {
    // 0.5 CPU at 25k req/s = 20 µs; 0.6 at 20k = 30 µs; 0.3 at 30k = 10 µs: median 20.
    expect(
      serverUsPerReq(
        row('get', [
          [25_000, 0.5, 1],
          [20_000, 0.6, 1],
          [30_000, 0.3, 1],
        ]),
      ),
    ).toBeCloseTo(20, 6)
  })

  test('HTTP vs RESP server CPU and p99 vs Redis are judged on the same run, at their thresholds', () => {
    const rows = {
      get: row('get', [[20_000, 0.58, 1]]), // 29 µs
      half: row('half', [[10_000, 0.3, 2.4]]),
      multi: row('multi', [[3_000, 0.9, 5]]),
      respGet: row('resp', [[25_000, 0.5, 1]]), // 20 µs
      redisMget: row('MGET', [[1_000, 0.9, 5]]),
      redisHalf: row('redis half', [[10_000, 0.1, 1.2]]),
    }
    const goals = serveGoals('1M × 100 B', rows)
    expect(goals.map((g) => g.id)).toEqual(['serve-multiget', 'serve-http-vs-resp-cpu', 'serve-p99', 'serve-p99-vs-redis'])
    const cpu = byId(goals, 'serve-http-vs-resp-cpu')
    expect(cpu.status).toBe('met') // 1.45×
    expect(cpu.measured).toMatch(/^1\.45× \(29\.0 vs 20\.0 µs\)$/)
    expect(byId(goals, 'serve-p99-vs-redis').status).toBe('met') // 2.4 ≤ 2 × 1.2
    expect(byId(goals, 'serve-p99').status).toBe('missed')
    expect(byId(goals, 'serve-multiget').status).toBe('met') // 300k vs 100k keys/s

    const worse = serveGoals('1M × 100 B', {
      ...rows,
      get: row('get', [[20_000, 0.62, 1]]),
      half: row('half', [[10_000, 0.3, 2.5]]),
    })
    expect(byId(worse, 'serve-http-vs-resp-cpu').status).toBe('missed')
    expect(byId(worse, 'serve-p99-vs-redis').status).toBe('missed')
  })

  test('a side that did not run leaves its goals not run, with the reason Redis gave', () => {
    const goals = serveGoals('1M × 100 B', {
      get: row('get', [[20_000, 0.6, 1]]),
      half: row('half', [[10_000, 0.3, 0.8]]),
      multi: row('multi', [[3_000, 0.9, 5]]),
      respGet: emptyRow('resp'),
      redisMget: emptyRow('MGET'),
      redisHalf: emptyRow('redis half'),
      redisSkip: 'redis-server not installed',
    })
    expect(byId(goals, 'serve-http-vs-resp-cpu').status).toBe('not run')
    expect(byId(goals, 'serve-p99-vs-redis')).toMatchObject({ status: 'not run', measured: 'Redis not run: redis-server not installed' })
    expect(byId(goals, 'serve-p99').status).toBe('met')
  })
})
