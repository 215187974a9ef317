import { Presets, SingleBar } from 'cli-progress'
import { writeFile, rename, rm } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import type { Argv } from 'yargs'
import { StoreError } from '../../common/errors'
import { dumpBuild, dumpCluster, type DumpInfo, type DumpProgress, type DumpSummary } from '../../client/dump/dump'
import type { OutputColumns } from '../../client/dump/dump-columns'
import type { StoredValues } from '../../formats/store/read/store-reader-api'
import { columnsFor, createOutput, DUMP_OUTPUT_FORMATS, type DumpOutputFormat, type OutputSink } from '../../client/dump/dump-output'
import { adminToken, adminTokenOption, loadClusterOption } from '../cluster-options'
import { integerOption } from '../integer-option'

export const command = 'dump'
export const describe = 'Stream a store version out of the cluster (or a build directory) into a file that `rostore build` reads back'

export const builder = (y: Argv) =>
  adminTokenOption(y)
    .option('cluster', { type: 'string', describe: 'cluster.json (or give --from-build)' })
    .option('store', { type: 'string', describe: 'store name (with --cluster)' })
    .option('from-build', { type: 'string', describe: "a build's output directory: dump it without a cluster" })
    .option('tls', { type: 'boolean', default: false, describe: "talk HTTPS to the nodes, trusting the system's CAs" })
    .option('ca-file', { type: 'string', describe: "PEM file of the CA(s) of the nodes' certificates; implies --tls" })
    .option('version', { ...integerOption('version'), describe: 'the version to dump (default: the live one)' })
    .option('partitions', { type: 'string', describe: 'comma-separated master partitions (default: all)' })
    .option('keys-only', { type: 'boolean', default: false, describe: 'keys without their values' })
    .option('stored-values', {
      type: 'boolean',
      default: false,
      describe: `values as the store keeps them (compressed; the file's metadata names the codec), the version's zstd dictionary beside the output as OUTPUT${DICTIONARY_SUFFIX}; --format arrow or parquet`,
    })
    .option('format', { choices: DUMP_OUTPUT_FORMATS, demandOption: true, describe: 'output format' })
    .option('output', { type: 'string', demandOption: true, describe: 'output file (written whole or not at all)' })
    .option('max-bytes-per-sec', { ...integerOption('max-bytes-per-sec'), describe: "per-stream limit, below each node's own" })
    .option('progress', { type: 'boolean', default: process.stderr.isTTY === true, describe: 'progress bar on stderr' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  const output = resolve(a.output)
  const format = a.format as DumpOutputFormat
  const partitions = a.partitions === undefined ? undefined : parsePartitions(a.partitions)
  const bar = a.progress ? progressBar() : undefined
  const storedValues = a['stored-values']
  if (storedValues && a['keys-only']) throw new StoreError('RO_BAD_OPTION', 'give --stored-values or --keys-only, not both')
  if (storedValues && format !== 'arrow' && format !== 'parquet')
    throw new StoreError('RO_BAD_OPTION', '--stored-values writes compressed bytes: use --format arrow or parquet')
  let sink: OutputSink | undefined
  let dictionary: DictionaryOutput | undefined
  const prepare = async (info: DumpInfo): Promise<OutputSink> => {
    const cols = columnsFor(info.keySerializer, info.valueSerializer, a['keys-only'])
    if (info.stored?.dictionary) dictionary = await stageDictionary(output, info.stored.dictionary.bytes)
    sink = await createOutput(output, format, info.stored ? storedColumns(cols, info.stored, basename(output)) : cols)
    return sink
  }
  let summary: DumpSummary
  try {
    if (a['from-build'] !== undefined) {
      if (a.cluster !== undefined) throw new StoreError('RO_BAD_OPTION', 'give --cluster or --from-build, not both')
      summary = await dumpBuild(
        { dir: a['from-build'], partitions, keysOnly: a['keys-only'], storedValues, onProgress: bar?.update },
        prepare,
      )
    } else {
      if (a.cluster === undefined || a.store === undefined)
        throw new StoreError('RO_BAD_OPTION', 'give --cluster and --store, or --from-build')
      summary = await dumpCluster(
        {
          cluster: await loadClusterOption({ cluster: a.cluster, tls: a.tls, 'ca-file': a['ca-file'] }),
          store: a.store,
          version: a.version,
          partitions,
          keysOnly: a['keys-only'],
          storedValues,
          token: adminToken(a['admin-token']),
          maxBytesPerSec: a['max-bytes-per-sec'],
          tmpDir: dirname(output),
          onProgress: bar?.update,
          onFailover: (e) =>
            process.stderr.write(`node ${e.node} failed (${e.error}); partitions ${e.partitions.join(',')} from another replica\n`),
        },
        prepare,
      )
    }
    await sink?.commit()
    await dictionary?.commit()
  } catch (err) {
    await sink?.abort()
    await dictionary?.abort()
    throw err
  } finally {
    bar?.stop()
  }
  process.stdout.write(`dumped ${summary.records} records of version ${summary.version} to ${output}\n`)
  if (dictionary) process.stdout.write(`values as stored (zstd frames without their magic number); dictionary: ${dictionary.path}\n`)
}

/** The output's dictionary file, beside it. */
export const DICTIONARY_SUFFIX = '.zstd.dict'

interface DictionaryOutput {
  readonly path: string
  commit(): Promise<void>
  abort(): Promise<void>
}

/** The dictionary written under a temporary name now, renamed beside the output once the output is. */
async function stageDictionary(output: string, bytes: Buffer): Promise<DictionaryOutput> {
  const path = `${output}${DICTIONARY_SUFFIX}`
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`)
  await writeFile(tmp, bytes)
  return { path, commit: () => rename(tmp, path), abort: () => rm(tmp, { force: true }) }
}

/**
 * Stored values are bytes whatever the store's serializer; the file's metadata says how
 * they are compressed (docs/CLI.md, dump): rostore.compression, and for zstd with a
 * trained dictionary rostore.dictionary (its xxh64) and rostore.dictionary-file.
 */
function storedColumns(cols: OutputColumns, stored: StoredValues, outputName: string): OutputColumns {
  const d = stored.dictionary
  return {
    ...cols,
    valueBinary: true,
    fileMetadata: {
      'rostore.compression': stored.compression,
      ...(stored.compression === 'zstd'
        ? { 'rostore.zstd-frames': 'without their magic number, unless a value starts with 28 B5 2F FD' }
        : {}),
      ...(d ? { 'rostore.dictionary': d.checksum, 'rostore.dictionary-file': `${outputName}${DICTIONARY_SUFFIX}` } : {}),
    },
  }
}

function parsePartitions(text: string): number[] {
  return text.split(',').map((t) => {
    if (!/^\d+$/.test(t.trim()))
      throw new StoreError('RO_BAD_OPTION', `--partitions must be comma-separated partition ids, got ${JSON.stringify(text)}`)
    return Number(t.trim())
  })
}

/** Records, bytes, rate and ETA (from the nodes' record counts) on stderr. */
function progressBar(): { update: (p: Readonly<DumpProgress>) => void; stop: () => void } {
  const bar = new SingleBar(
    {
      format: 'dump [{bar}] {percentage}% | {value}/{total} records | {mib} MiB | {rate} | ETA {eta_formatted}',
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  )
  const t0 = Date.now()
  let started = false
  let last = 0
  return {
    update: (p) => {
      const now = Date.now()
      if (started && now - last < 200) return
      last = now
      const mib = p.bytes / 1048576
      const payload = { mib: mib.toFixed(1), rate: `${(mib / Math.max(0.001, (now - t0) / 1000)).toFixed(1)} MiB/s` }
      const total = Math.max(1, p.estimatedRecords, p.records)
      if (!started) bar.start(total, p.records, payload)
      else bar.setTotal(total)
      bar.update(p.records, payload)
      started = true
    },
    stop: () => {
      if (started) bar.stop()
    },
  }
}
