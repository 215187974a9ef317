import { statfs } from 'node:fs/promises'
import { Registry } from 'prom-client'
import { DataDir } from '../../../swapper/data-dir'
import { Jobs } from '../../../server/jobs/jobs'
import { registerOperationsMetrics } from '../../../server/ops-metrics'
import { makeTmp } from '../../../testkit/stores/tmp'

/** The gauges the shipped alerts read: disk free of the data directory, jobs, fetch progress. */
const tmp = makeTmp('rostore-ops-metrics-')
afterAll(() => tmp.cleanup())

/** Value of `name{labels}` in the registry's text, or undefined when the series is absent. */
async function sample(registry: Registry, name: string, labels = ''): Promise<number | undefined> {
  const text = await registry.metrics()
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `))
  return line === undefined ? undefined : Number(line.split(' ').at(-1))
}

test('disk free and size are those of the data directory file system', async () => {
  const registry = new Registry()
  const dataDir = await DataDir.open({ dir: tmp.fresh() })
  registerOperationsMetrics(registry, { dataDir, jobs: new Jobs() })
  const s = await statfs(dataDir.dir)
  expect(await sample(registry, 'rostore_data_dir_size_bytes')).toBe(s.blocks * s.bsize)
  const free = await sample(registry, 'rostore_data_dir_free_bytes')
  expect(free).toBeGreaterThan(0)
  expect(free).toBeLessThanOrEqual(s.blocks * s.bsize)
  await dataDir.close()
})

test('a running fetch shows its progress and its age; once finished, the series go', async () => {
  const registry = new Registry()
  const dataDir = await DataDir.open({ dir: tmp.fresh() })
  const jobs = new Jobs()
  registerOperationsMetrics(registry, { dataDir, jobs })
  expect(await sample(registry, 'rostore_jobs_running', 'kind="fetch"')).toBe(0)
  expect(await sample(registry, 'rostore_fetch_progress_bytes', 'store="users"')).toBeUndefined()
  let finish!: () => void
  const job = jobs.start('fetch', 'users', async ({ progress }) => {
    progress({ bytesDone: 300, bytesTotal: 1000, rateBytesPerSec: 10, etaSeconds: 70 })
    await new Promise<void>((resolve) => (finish = resolve))
  })
  expect(await sample(registry, 'rostore_jobs_running', 'kind="fetch"')).toBe(1)
  expect(await sample(registry, 'rostore_jobs_running', 'kind="install"')).toBe(0)
  expect(await sample(registry, 'rostore_fetch_progress_bytes', 'store="users"')).toBe(300)
  expect(await sample(registry, 'rostore_fetch_progress_total_bytes', 'store="users"')).toBe(1000)
  expect(await sample(registry, 'rostore_job_oldest_running_seconds', 'kind="fetch"')).toBeGreaterThanOrEqual(0)
  finish()
  await jobs.wait(job.id)
  expect(await sample(registry, 'rostore_jobs_running', 'kind="fetch"')).toBe(0)
  expect(await sample(registry, 'rostore_fetch_progress_bytes', 'store="users"')).toBeUndefined()
  await dataDir.close()
})
