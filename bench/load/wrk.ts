/**
 * wrk (Debian package `wrk`, C, epoll) as the peak-throughput load generator of the
 * serving benchmark: like redis-benchmark on the Redis side, it costs far less CPU per
 * request than a Node client, so on a 2-core machine the server rather than the client
 * is what gets measured. One wrk thread, pinned to the client core; a Lua script cycles
 * through precomputed random keys (GET) or multi-get bodies, and prints the summary and
 * latency percentiles (µs) as JSON in done(). wrk counts non-2xx answers as "status
 * errors": for GETs those are the 404s of absent keys (about 10%), checked against that.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDir, keyOf, streamIds, workRoot } from '../kit/data'
import type { LoadResult } from './load-client'
import { ensureDebian, runTimed } from '../kit/system'

export function ensureWrk(): Promise<string | undefined> {
  return ensureDebian(['wrk'], ['wrk'])
}

const SCRIPT = `
local items = {}
local n = 0
local i = 0
local mode = "get"

function init(args)
  mode = args[2]
  local store = args[3]
  local batch = tonumber(args[4])
  local keys = {}
  for line in io.lines(args[1]) do keys[#keys + 1] = line end
  if mode == "get" then
    for k = 1, #keys do items[#items + 1] = wrk.format("GET", "/stores/" .. store .. "/keys/" .. keys[k]) end
  else
    local hdr = { ["Content-Type"] = "application/octet-stream" }
    local k = 1
    while k + batch - 1 <= #keys do
      local parts = {}
      for j = 0, batch - 1 do
        local key = keys[k + j]
        local len = #key
        parts[#parts + 1] = string.char(math.floor(len / 16777216) % 256, math.floor(len / 65536) % 256, math.floor(len / 256) % 256, len % 256) .. key
      end
      items[#items + 1] = wrk.format("POST", "/stores/" .. store .. "/multi-get", hdr, table.concat(parts))
      k = k + batch
    end
  end
  n = #items
  i = math.random(n) - 1
end

function request()
  i = i + 1
  if i > n then i = 1 end
  return items[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`

export interface WrkJob {
  readonly port: number
  readonly store: string
  readonly mode: 'get' | 'multiget'
  readonly records: number
  readonly seed: number
  readonly batch: number
  readonly connections: number
  readonly durationSec: number
  readonly cpu?: number
}

/** Writes the Lua script and the key list of a job (once per parameters). */
function prepare(job: WrkJob): { script: string; keys: string } {
  const dir = ensureDir(join(workRoot(), 'wrk'))
  const script = join(dir, 'rostore.lua')
  writeFileSync(script, SCRIPT)
  const count = job.mode === 'get' ? 200_000 : 2_000 * job.batch
  const keys = join(dir, `keys-${job.records}-${job.seed}-${count}.txt`)
  const ids = streamIds('uniform', job.records, count, job.seed + 17)
  const lines: string[] = []
  for (let j = 0; j < ids.length; j++) lines.push(keyOf(ids[j] as number))
  writeFileSync(keys, `${lines.join('\n')}\n`)
  return { script, keys }
}

export async function runWrk(job: WrkJob): Promise<LoadResult & { clientCpu: number }> {
  const { script, keys } = prepare(job)
  const duration = Math.max(1, Math.round(job.durationSec))
  const t = await runTimed(
    'wrk',
    [
      '-t',
      '1',
      '-c',
      String(job.connections),
      '-d',
      `${duration}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      `http://127.0.0.1:${job.port}`,
      '--',
      keys,
      job.mode,
      job.store,
      String(job.batch),
    ],
    { cpu: job.cpu, timeoutMs: (duration + 120) * 1000 },
  )
  const line = t.stdout.split('\n').find((l) => l.startsWith('WRK_JSON '))
  if (!line) throw new Error(`wrk printed no summary: ${t.stdout.slice(-500)} ${t.stderr.slice(-500)}`)
  const w = JSON.parse(line.slice('WRK_JSON '.length)) as Record<string, number>
  const secs = (w.duration_us ?? NaN) / 1e6
  const requests = w.requests ?? 0
  const status = w.status ?? 0
  const socketErrors = (w.connect ?? 0) + (w.read ?? 0) + (w.write ?? 0)
  return {
    requests,
    secs,
    rps: requests / secs,
    keysPerSec: (requests * (job.mode === 'get' ? 1 : job.batch)) / secs,
    status200: requests - status,
    status404: status,
    otherStatus: job.mode === 'multiget' ? status : 0,
    errors: socketErrors + (job.mode === 'get' && status > requests * 0.15 ? status : 0),
    timeouts: w.timeout ?? 0,
    p50Ms: (w.p50_us ?? NaN) / 1000,
    p90Ms: (w.p90_us ?? NaN) / 1000,
    p99Ms: (w.p99_us ?? NaN) / 1000,
    maxMs: (w.max_us ?? NaN) / 1000,
    clientCpu: (t.userSecs + t.sysSecs) / secs,
  }
}
