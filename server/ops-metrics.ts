import { statfs } from 'node:fs/promises'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { DataDir } from '../swapper/data-dir'
import type { ServingMirror } from '../swapper/serving-mirror'
import type { Jobs } from './jobs/jobs'

/** The job kinds always exported (0 when idle), so an alert on them has a series to look at. */
const JOB_KINDS = ['fetch', 'install', 'repair'] as const

/**
 * The gauges on-call alerts on (deploy/prometheus/rostore-rules.yml) that the request
 * metrics cannot give: disk space of the data directory, jobs running and for how long,
 * the progress of fetches, and reads that found damaged files. Read when scraped, on the
 * side of the node that owns the data directory and the jobs.
 */
export function registerOperationsMetrics(registry: Registry, src: { dataDir: DataDir<ServingMirror>; jobs: Jobs }): void {
  const registers = [registry]
  const disk = async (): Promise<{ free: number; size: number } | undefined> => {
    try {
      const s = await statfs(src.dataDir.dir)
      return { free: s.bavail * s.bsize, size: s.blocks * s.bsize }
    } catch {
      return undefined
    }
  }
  new Gauge({
    name: 'rostore_data_dir_free_bytes',
    help: 'Bytes the node may still write on the file system of its data directory',
    registers,
    async collect() {
      const d = await disk()
      if (d) this.set(d.free)
    },
  })
  new Gauge({
    name: 'rostore_data_dir_size_bytes',
    help: 'Size of the file system of the data directory',
    registers,
    async collect() {
      const d = await disk()
      if (d) this.set(d.size)
    },
  })
  new Gauge({
    name: 'rostore_jobs_running',
    help: 'Admin jobs running (fetch, install, repair), by kind',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset()
      for (const kind of JOB_KINDS) this.set({ kind }, 0)
      for (const j of src.jobs.running()) this.inc({ kind: j.kind })
    },
  })
  new Gauge({
    name: 'rostore_job_oldest_running_seconds',
    help: 'Age of the oldest running admin job, by kind (0 when none runs)',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset()
      const now = Date.now()
      for (const kind of JOB_KINDS) this.set({ kind }, 0)
      for (const j of src.jobs.running()) {
        const age = (now - Date.parse(j.createdAt)) / 1000
        this.set({ kind: j.kind }, Math.max(age, 0))
      }
    },
  })
  fetchProgressGauges(registers, src.jobs)
  new Counter({
    name: 'rostore_store_corrupt_reads_total',
    help: 'Reads of the store that found its files damaged since the node started (clients read other replicas)',
    labelNames: ['store'],
    registers,
    async collect() {
      this.reset()
      for (const s of src.dataDir.all()) this.inc({ store: s.store }, (await s.serving.corruptReads())?.count ?? 0)
    },
  })
}

/** Bytes fetched and to fetch of the fetches (and self-repairs) running now, by store (no series when none runs). */
function fetchProgressGauges(registers: Registry[], jobs: Jobs): void {
  const gauge = (name: string, help: string, field: 'bytesDone' | 'bytesTotal'): void => {
    new Gauge({
      name,
      help,
      labelNames: ['store'],
      registers,
      collect() {
        this.reset()
        for (const j of jobs.running()) {
          const p = j.progress as Partial<Record<typeof field, unknown>> | undefined
          if ((j.kind === 'fetch' || j.kind === 'repair') && typeof p?.[field] === 'number') this.inc({ store: j.store }, p[field])
        }
      },
    })
  }
  gauge('rostore_fetch_progress_bytes', 'Bytes fetched so far by the running fetch of each store', 'bytesDone')
  gauge('rostore_fetch_progress_total_bytes', 'Bytes the running fetch of each store pulls in all', 'bytesTotal')
}
