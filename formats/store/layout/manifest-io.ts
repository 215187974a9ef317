import { join } from 'node:path'
import { StoreError } from '../../../common/errors'
import { checkDictionaryField } from '../chunk/dictionary-file'
import { isKnownKeyHash } from './key-hash'
import { isSafeName } from './layout'
import { CHECKSUM_ALGORITHMS, COMPRESSIONS, METADATA_FILE, type StoreMetadata } from './metadata'
import { parseJsonText, readJsonText, validateMetadata, writeJsonDurably } from './metadata-io'
import { PATCH_HEADER_SIZE, patchFileName } from '../patch/patch-file'
import { PARTITIONED_FORMAT_MAJOR, parsePartitionFileName, type PartitionEntry, type VersionManifest } from './partition-files'

/**
 * The version manifest of format 2 (partition-files.ts `VersionManifest`): the build
 * output's metadata.json, and a node's manifest.json. Read from places a fetcher does not
 * control (object storage, peers), so every field is checked before any is trusted.
 */
export async function readManifest(dir: string, name: string = METADATA_FILE): Promise<VersionManifest> {
  const file = join(dir, name)
  return parseManifest(await readJsonText(file, 'manifest'), file)
}

export function parseManifest(text: string, file: string): VersionManifest {
  return validateManifest(parseJsonText(text, file), file)
}

/** Largest chunk count a build writes (build-options.ts). */
const MAX_CHUNKS = 65536

/** Checks every field of a version manifest; `file` names it in messages. */
export function validateManifest(json: unknown, file: string): VersionManifest {
  const bad = (msg: string): never => {
    throw new StoreError('RO_CORRUPT', `${file}: ${msg}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return bad('not a JSON object')
  const m = json as Record<string, unknown>
  if (m['format'] !== 'rostore') throw new StoreError('RO_BAD_FORMAT', `${file}: not a rostore manifest`)
  if (m['formatMajor'] !== PARTITIONED_FORMAT_MAJOR) {
    throw new StoreError(
      'RO_BAD_FORMAT',
      `${file}: format major version ${String(m['formatMajor'])}, a version manifest is format ${PARTITIONED_FORMAT_MAJOR}`,
    )
  }
  const int = (v: unknown, what: string, min = 0): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(`${what} must be an integer >= ${min}`)
    return v as number
  }
  const str = (k: string): string => {
    const v = m[k]
    if (typeof v !== 'string' || v.length === 0) bad(`"${k}" must be a non-empty string`)
    return v as string
  }
  int(m['formatMinor'], '"formatMinor"')
  if (!isSafeName(str('store'))) bad('"store" is not a valid store name')
  const version = int(m['version'], '"version"', 1)
  const dataVersion = int(m['dataVersion'], '"dataVersion"', 1)
  if (dataVersion > version) bad(`"dataVersion" ${dataVersion} is newer than "version" ${version}`)
  str('clusterName')
  str('keyHash')
  const replication = int(m['replication'], '"replication"', 1)
  const chunks = int(m['chunks'], '"chunks"', 1)
  if (chunks > MAX_CHUNKS) bad(`"chunks" ${chunks} exceeds ${MAX_CHUNKS}`)
  const records = int(m['records'], '"records"')
  if (!['string', 'bytes'].includes(m['keySerializer'] as string)) bad('"keySerializer" must be string or bytes')
  if (!['string', 'json', 'bytes', 'mixed'].includes(m['valueSerializer'] as string)) bad('unknown "valueSerializer"')
  if (!(COMPRESSIONS as readonly unknown[]).includes(m['compression'])) bad(`unknown compression ${JSON.stringify(m['compression'])}`)
  checkDictionaryField(m, bad)
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(m['checksumAlgorithm']))
    bad(`unknown checksum algorithm ${JSON.stringify(m['checksumAlgorithm'])}`)
  const build = m['build']
  if (typeof build !== 'object' || build === null || Array.isArray(build)) bad('"build" must be an object')
  const { nodes, partitions } = checkLayout(m['layout'], bad)
  if (replication > nodes) bad(`"replication" ${replication} exceeds the ${nodes} nodes of "layout"`)
  if (m['partitions'] !== partitions) bad(`"partitions" must be ${partitions}, the partition count of "layout"`)

  if (m['base'] !== undefined) checkBase(m['base'], version, bad)
  const list = m['partitionFiles']
  if (!Array.isArray(list) || list.length !== partitions) bad(`"partitionFiles" must list the ${partitions} partitions`)
  let sum = 0
  ;(list as unknown[]).forEach((entry, i) => {
    const e = entry as Record<string, unknown>
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) bad(`"partitionFiles"[${i}] is not an object`)
    if (e['partition'] !== i) bad(`"partitionFiles"[${i}] must be partition ${i} (partitions 0..${partitions - 1}, ascending, once each)`)
    const where = `partition ${i}`
    const n = int(e['records'], `${where}: "records"`)
    const chunkRecords = e['chunkRecords']
    if (
      !Array.isArray(chunkRecords) ||
      chunkRecords.length !== chunks ||
      !chunkRecords.every((c) => typeof c === 'number' && Number.isSafeInteger(c) && c >= 0)
    )
      bad(`${where}: "chunkRecords" must list one record count per chunk (${chunks})`)
    if ((chunkRecords as number[]).reduce((a, b) => a + b, 0) !== n) bad(`${where}: "records" is not the sum of "chunkRecords"`)
    checkPartitionFiles(e['files'], i, chunks, where, bad)
    if (e['patch'] !== undefined) checkPatchEntry(e['patch'], i, m['base'] !== undefined, where, bad)
    sum += n
  })
  if (sum !== records) bad(`"records" ${records} is not the sum of the partitions' records (${sum})`)
  return json as VersionManifest
}

/** The layout is a whole ring: distinct node ids, partitions 0..P-1 each owned once. */
function checkLayout(layout: unknown, bad: (msg: string) => never): { nodes: number; partitions: number } {
  if (!Array.isArray(layout) || layout.length === 0) bad('"layout" must be a non-empty array')
  const ids = new Set<number>()
  const partitions = new Set<number>()
  for (const n of layout as unknown[]) {
    const node = n as Record<string, unknown>
    if (typeof n !== 'object' || n === null || !Number.isSafeInteger(node['id']) || !Array.isArray(node['partitions']))
      bad('"layout" entries must have "id" and "partitions"')
    if (ids.has(node['id'] as number)) bad(`"layout" lists node ${String(node['id'])} twice`)
    ids.add(node['id'] as number)
    for (const p of node['partitions'] as unknown[]) {
      if (!Number.isSafeInteger(p) || (p as number) < 0 || partitions.has(p as number))
        bad(`"layout": bad or repeated partition ${JSON.stringify(p)}`)
      partitions.add(p as number)
    }
  }
  if (partitions.size === 0) bad('"layout" holds no partition')
  for (let p = 0; p < partitions.size; p++)
    if (!partitions.has(p)) bad(`"layout": partitions must be 0..${partitions.size - 1}, ${p} is missing`)
  return { nodes: ids.size, partitions: partitions.size }
}

/**
 * A partition's files: index then data of each chunk 0..chunks-1, in chunk order (a node's
 * view concatenates them into slot order), named for this partition.
 */
function checkPartitionFiles(files: unknown, partition: number, chunks: number, where: string, bad: (msg: string) => never): void {
  if (!Array.isArray(files)) return bad(`${where}: "files" must be an array`)
  ;(files as unknown[]).forEach((f, i) => {
    const e = f as Record<string, unknown>
    const name = typeof f === 'object' && f !== null ? e['name'] : undefined
    const parsed = typeof name === 'string' ? parsePartitionFileName(name) : undefined
    if (parsed === undefined) bad(`${where}: "files" may only name partition files (p<P>-c<C>.index|data), got ${JSON.stringify(name)}`)
    const p = parsed as NonNullable<typeof parsed>
    if (p.partition !== partition) bad(`${where}: file ${String(name)} belongs to partition ${p.partition}`)
    if (p.chunk >= chunks) bad(`${where}: file ${String(name)} names chunk ${p.chunk}, the version has ${chunks} per partition`)
    if (p.chunk !== Math.floor(i / 2) || p.kind !== (i % 2 === 0 ? 'index' : 'data'))
      bad(`${where}: file ${String(name)} out of place: "files" lists each chunk's index then data, chunk 0 first, once each`)
    if (!Number.isSafeInteger(e['size']) || (e['size'] as number) < 0) bad(`file ${String(name)}: bad size`)
    if (typeof e['checksum'] !== 'string' || !/^[0-9a-f]{8,128}$/.test(e['checksum'])) bad(`file ${String(name)}: bad checksum`)
  })
  if (files.length !== 2 * chunks) bad(`${where}: "files" must list ${2 * chunks} chunk files, lists ${files.length}`)
}

/** The base a build's patches apply to: an older version. */
function checkBase(base: unknown, version: number, bad: (msg: string) => never): void {
  const b = base as Record<string, unknown>
  if (typeof base !== 'object' || base === null || Array.isArray(base)) bad('"base" must be an object')
  const v = b['version']
  const d = b['dataVersion']
  if (!Number.isSafeInteger(v) || (v as number) < 1 || (v as number) >= version)
    bad(`"base"."version" must be an older version than ${version}`)
  if (!Number.isSafeInteger(d) || (d as number) < 1 || (d as number) > (v as number)) bad('"base"."dataVersion" must be 1..its version')
}

/** A partition's patch: named for the partition, sized, checksummed; only with a base. */
function checkPatchEntry(patch: unknown, partition: number, hasBase: boolean, where: string, bad: (msg: string) => never): void {
  const e = patch as Record<string, unknown>
  if (!hasBase) bad(`${where}: a "patch" needs the manifest's "base"`)
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) bad(`${where}: "patch" must be an object`)
  if (e['name'] !== patchFileName(partition)) bad(`${where}: "patch" must be named ${patchFileName(partition)}`)
  if (!Number.isSafeInteger(e['size']) || (e['size'] as number) < PATCH_HEADER_SIZE) bad(`${where}: bad patch size`)
  if (!Number.isSafeInteger(e['ops']) || (e['ops'] as number) < 0) bad(`${where}: bad patch "ops"`)
  if (typeof e['checksum'] !== 'string' || !/^[0-9a-f]{8,128}$/.test(e['checksum'])) bad(`${where}: bad patch checksum`)
}

/** Writes a manifest durably: temp file, fsync, rename. */
export async function writeManifest(dir: string, manifest: VersionManifest, name: string = METADATA_FILE): Promise<void> {
  await writeJsonDurably(join(dir, name), manifest)
}

/**
 * A directory's metadata.json, whichever it is: a node directory's (format 1 or a
 * format-2 node view) or a format-2 build output's version manifest (it lists
 * `partitionFiles`). For tools that take either (verify).
 */
export async function readNodeOrBuild(
  dir: string,
): Promise<{ readonly kind: 'node'; readonly meta: StoreMetadata } | { readonly kind: 'build'; readonly manifest: VersionManifest }> {
  const file = join(dir, METADATA_FILE)
  const json = await readJson(file)
  const isManifest = typeof json === 'object' && json !== null && 'partitionFiles' in json
  const found = isManifest
    ? ({ kind: 'build', manifest: validateManifest(json, file) } as const)
    : ({ kind: 'node', meta: validateMetadata(json, file) } as const)
  // Read to hash keys (readers, verify): a hash they cannot compute is refused, as readMetadata does.
  const keyHash = found.kind === 'build' ? found.manifest.keyHash : found.meta.keyHash
  if (!isKnownKeyHash(keyHash)) throw new StoreError('RO_CORRUPT', `${file}: unknown "keyHash" ${JSON.stringify(keyHash)}`)
  return found
}

/**
 * The manifest seen as the metadata of one directory holding every partition (a build
 * output): slot s × chunks + c is chunk c of partition s. Lets verify and dumps walk a
 * build output with the node-directory code; nodeId -1 stands for "no node".
 */
export function wholeVersionView(m: VersionManifest): StoreMetadata {
  const entries: readonly PartitionEntry[] = m.partitionFiles
  return {
    format: 'rostore',
    formatMajor: m.formatMajor,
    formatMinor: m.formatMinor,
    store: m.store,
    version: m.version,
    dataVersion: m.dataVersion,
    nodeId: -1,
    held: entries.map((e) => e.partition),
    clusterName: m.clusterName,
    layout: m.layout,
    replication: m.replication,
    keyHash: m.keyHash,
    keySerializer: m.keySerializer,
    valueSerializer: m.valueSerializer,
    compression: m.compression,
    ...(m.dictionary ? { dictionary: m.dictionary } : {}),
    chunks: m.chunks,
    records: m.records,
    chunkRecords: entries.flatMap((e) => e.chunkRecords),
    checksumAlgorithm: m.checksumAlgorithm,
    files: entries.flatMap((e) => e.files),
    build: m.build,
  }
}

async function readJson(file: string): Promise<unknown> {
  return parseJsonText(await readJsonText(file, 'manifest'), file)
}
