import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../../common/paths'
import type { RespConnection } from '../connection'
import { argText, type CommandSpec, type Handler, type RespService } from '../command-table'

/**
 * The Redis version whose commands this port answers like Redis does (HELLO `version`,
 * INFO `redis_version`): clients pick features from it. rostore's own version is in
 * `rostore_version`.
 */
export const REDIS_COMPAT_VERSION = '7.0.0'

let cachedVersion: string | undefined
export function rostoreVersion(): string {
  if (cachedVersion === undefined) {
    try {
      cachedVersion = String(
        (JSON.parse(readFileSync(join(packageRoot(__dirname), 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0',
      )
    } catch {
      cachedVersion = '0.0.0'
    }
  }
  return cachedVersion
}

/** One line of CLIENT INFO, in Redis's field format. */
export function clientInfoLine(c: RespConnection): string {
  const now = Date.now()
  return [
    `id=${c.id}`,
    `addr=${c.remote}`,
    `laddr=${c.local}`,
    `name=${c.name}`,
    `age=${Math.floor((now - c.createdAt) / 1000)}`,
    `idle=${Math.floor((now - c.lastActiveAt) / 1000)}`,
    'flags=N',
    'db=0',
    `qbuf=${c.parser.buffered}`,
    `resp=${c.proto}`,
    `lib-name=${c.libName}`,
    `lib-ver=${c.libVer}`,
    `cmd=${c.lastCommand}`,
  ].join(' ')
}

const SECTIONS = ['server', 'clients', 'memory', 'persistence', 'stats', 'replication', 'cpu', 'keyspace'] as const
type Section = (typeof SECTIONS)[number]
const TITLES: Record<Section, string> = {
  server: 'Server',
  clients: 'Clients',
  memory: 'Memory',
  persistence: 'Persistence',
  stats: 'Stats',
  replication: 'Replication',
  cpu: 'CPU',
  keyspace: 'Keyspace',
}

/** INFO's text: `# Section` headers and `field:value` lines, as Redis prints them. */
export function infoText(s: RespService, wanted: ReadonlySet<string>): string {
  const all = wanted.size === 0 || wanted.has('all') || wanted.has('default') || wanted.has('everything')
  const out: string[] = []
  for (const sec of SECTIONS) {
    if (!all && !wanted.has(sec)) continue
    if (out.length) out.push('')
    out.push(`# ${TITLES[sec]}`, ...section(s, sec))
  }
  return `${out.join('\r\n')}\r\n`
}

function section(s: RespService, sec: Section): string[] {
  const st = s.stats
  switch (sec) {
    case 'server': {
      const up = Math.floor((Date.now() - s.startedAt) / 1000)
      return [
        `redis_version:${REDIS_COMPAT_VERSION}`,
        `rostore_version:${rostoreVersion()}`,
        'redis_mode:standalone',
        // No process id, kernel or OS: callers without a token learn no more here than
        // from /status (docs/SECURITY.md). run_id is random per serving process.
        `arch_bits:${process.arch.endsWith('64') ? 64 : 32}`,
        `run_id:${s.runId}`,
        `tcp_port:${s.address().port}`,
        `uptime_in_seconds:${up}`,
        `uptime_in_days:${Math.floor(up / 86400)}`,
        `rostore_node_id:${s.ctx.nodeId}`,
        `rostore_cluster:${s.ctx.cluster.name}`,
        `rostore_key_naming:${s.opts.defaultStore === undefined ? 'store:key' : `bare keys of ${s.opts.defaultStore}`}`,
      ]
    }
    case 'clients':
      return [`connected_clients:${st.connected}`, `maxclients:${s.opts.maxClients}`, 'blocked_clients:0']
    case 'memory': {
      const m = process.memoryUsage()
      return [`used_memory:${m.heapUsed + m.external}`, `used_memory_rss:${m.rss}`, `used_memory_peak:${m.rss}`]
    }
    case 'persistence':
      return ['loading:0', 'rdb_bgsave_in_progress:0', 'aof_enabled:0']
    case 'stats':
      return [
        `total_connections_received:${st.connectionsTotal}`,
        `total_commands_processed:${st.commands}`,
        `total_net_input_bytes:${st.netInputBytes}`,
        `rejected_connections:${st.rejectedConnections}`,
        `keyspace_hits:${st.keyspaceHits}`,
        `keyspace_misses:${st.keyspaceMisses}`,
        `rostore_local_keys:${st.localKeys}`,
        `rostore_cold_commands:${st.coldCommands}`,
        `rostore_forwarded_keys:${st.forwardedKeys}`,
        `rostore_forward_failures:${st.forwardFailures}`,
        `rostore_mixed_version_reads:${st.mixedVersionReads}`,
        `rostore_peer_keys:${st.peerKeys}`,
        `rostore_protocol_errors:${st.protocolErrors}`,
        `rostore_auth_failures:${st.authFailures}`,
        `rostore_send_timeouts:${st.sendTimeouts}`,
        `rostore_idle_timeouts:${st.idleTimeouts}`,
        `rostore_busy_refusals:${st.busyRefusals}`,
        `rostore_buffered_request_bytes:${st.requestBudget.held}`,
      ]
    case 'replication':
      return ['role:master', 'connected_slaves:0']
    case 'cpu': {
      const u = process.cpuUsage()
      return [`used_cpu_sys:${(u.system / 1e6).toFixed(6)}`, `used_cpu_user:${(u.user / 1e6).toFixed(6)}`]
    }
    case 'keyspace': {
      const stores = s.ctx.stores.all().filter((sv) => s.opts.defaultStore === undefined || sv.store === s.opts.defaultStore)
      let records = 0
      const lines: string[] = []
      for (const sv of stores) {
        const meta = sv.live.metadata
        records += meta?.records ?? 0
        const k = st.stores.get(sv.store)
        lines.push(
          `store_${sv.store}:version=${meta?.version ?? 0},records=${meta?.records ?? 0},stale=${sv.stale ? 1 : 0}` +
            `,local_hits=${k?.localHits ?? 0},local_misses=${k?.localMisses ?? 0}` +
            `,forwarded_hits=${k?.forwardedHits ?? 0},forwarded_misses=${k?.forwardedMisses ?? 0}` +
            `,peer_hits=${k?.peerHits ?? 0},peer_misses=${k?.peerMisses ?? 0}`,
        )
      }
      return [`db0:keys=${records},expires=0,avg_ttl=0`, ...lines]
    }
  }
}

const info: Handler = (s, c) => {
  const wanted = new Set<string>()
  for (let i = 1; i < c.parser.argc; i++) wanted.add(argText(c, i).toLowerCase())
  c.out().verbatim(infoText(s, wanted), c.proto)
}

export const INFO_COMMAND: CommandSpec = {
  name: 'info',
  arity: -1,
  flags: ['loading', 'stale'],
  firstKey: 0,
  lastKey: 0,
  step: 0,
  categories: ['@slow', '@dangerous'],
  group: 'server',
  summary: 'Returns information and statistics: server, clients, memory, persistence, stats, replication, cpu, keyspace (stores).',
  since: '1.0.0',
  complexity: 'O(1)',
  args: [{ name: 'section', type: 'string', optional: true, multiple: true }],
  run: info,
}
