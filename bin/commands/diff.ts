import { isUtf8 } from 'node:buffer'
import type { Argv } from 'yargs'
import { StoreError } from '../../common/errors'
import { buildSide, clusterSide, diffSides, type DiffSide } from '../../client/dump/diff'
import { readPatchSummary } from '../../client/dump/diff-patch'
import { adminToken, adminTokenOption, loadClusterOption } from '../cluster-options'
import { integerOption } from '../integer-option'

export const command = 'diff'
export const describe = 'Added, removed and changed keys between two versions of a store (live, a named version, or a build directory)'

export const builder = (y: Argv) =>
  adminTokenOption(y)
    .option('old', { type: 'string', default: 'live', describe: '"live", a version number (on the cluster), or a build output directory' })
    .option('new', {
      type: 'string',
      describe: '"live", a version number (on the cluster), or a build output directory (required without --patch)',
    })
    .option('patch', {
      type: 'string',
      describe: 'instead: a partition patch (p<P>.patch of a build made with --base); --keys prints "* key" per put, "- key" per delete',
    })
    .option('cluster', { type: 'string', describe: 'cluster.json (for "live" and version numbers)' })
    .option('store', { type: 'string', describe: 'store name (with --cluster)' })
    .option('tls', { type: 'boolean', default: false, describe: "talk HTTPS to the nodes, trusting the system's CAs" })
    .option('ca-file', { type: 'string', describe: "PEM file of the CA(s) of the nodes' certificates; implies --tls" })
    .option('keys', {
      type: 'boolean',
      default: false,
      describe: 'print every differing key: "+ key", "- key", "~ key" (base64 with "b64:" when not text)',
    })
    .option('memory-mb', { ...integerOption('memory-mb'), default: 64, describe: 'read buffers of build directories, in all' })
    .option('json', { type: 'boolean', default: false, describe: 'the counts as one JSON object' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  if (a.patch !== undefined) return diffPatch(a.patch, a.keys, a.json)
  if (a.new === undefined) throw new StoreError('RO_BAD_OPTION', '--new is required (or --patch)')
  const side = async (spec: string): Promise<DiffSide> => {
    if (spec !== 'live' && !/^\d+$/.test(spec))
      return buildSide(spec, { blockBytes: Math.max(64 << 10, Math.min(1 << 20, (a['memory-mb'] << 20) / 64)) })
    if (a.cluster === undefined || a.store === undefined)
      throw new StoreError('RO_BAD_OPTION', `--cluster and --store are needed for "${spec}"`)
    const cluster = await loadClusterOption({ cluster: a.cluster, tls: a.tls, 'ca-file': a['ca-file'] })
    return clusterSide({
      cluster,
      store: a.store,
      version: spec === 'live' ? undefined : Number(spec),
      token: adminToken(a['admin-token']),
    })
  }
  const mark = { added: '+', removed: '-', changed: '~' } as const
  let lines: string[] = []
  const flush = (): void => {
    if (lines.length > 0) process.stdout.write(lines.join(''))
    lines = []
  }
  const counts = await diffSides(
    await side(a.old),
    await side(a.new as string),
    a.keys
      ? (kind, key) => {
          lines.push(
            `${mark[kind]} ${isUtf8(key) && !/[\n\r]/.test(key.toString()) ? key.toString('utf8') : `b64:${key.toString('base64')}`}\n`,
          )
          if (lines.length >= 1024) flush()
        }
      : undefined,
  )
  flush()
  if (a.json) process.stdout.write(JSON.stringify(counts) + '\n')
  else process.stdout.write(`added ${counts.added}, removed ${counts.removed}, changed ${counts.changed}, unchanged ${counts.unchanged}\n`)
}

const shown = (key: Buffer): string =>
  isUtf8(key) && !/[\n\r]/.test(key.toString()) ? key.toString('utf8') : `b64:${key.toString('base64')}`

async function diffPatch(file: string, keys: boolean, json: boolean): Promise<void> {
  let lines: string[] = []
  const s = await readPatchSummary(
    file,
    keys
      ? (kind, key) => {
          lines.push(`${kind === 'put' ? '*' : '-'} ${shown(key)}\n`)
          if (lines.length >= 1024) {
            process.stdout.write(lines.join(''))
            lines = []
          }
        }
      : undefined,
  )
  if (lines.length > 0) process.stdout.write(lines.join(''))
  if (json) process.stdout.write(JSON.stringify(s) + '\n')
  else
    process.stdout.write(
      `patch of partition ${s.partition}, data version ${s.baseDataVersion} -> ${s.dataVersion}: put (added or changed) ${s.puts}, removed ${s.deleted}\n`,
    )
}
