import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32 } from '../../../common/crc32'
import type { VersionManifest } from '../../../formats/store/layout/partition-files'
import { applyPatch } from '../../../formats/store/patch/patch-apply'
import { PATCH_HEADER_SIZE, decodePatchHeader, encodePatchHeader, type PatchCodec } from '../../../formats/store/patch/patch-file'
import { openPatch, type PatchOp } from '../../../formats/store/patch/patch-read'
import { PatchWriter } from '../../../formats/store/patch/patch-writer'
import { patchAll, patchBuilds } from '../../../testkit/stores/patch-builds'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A patch body is zstd frames where the builder has libzstd, gzip members where it has not
 * (docs/FORMAT.md, "Partition patches"). Either must rebuild the same files, the pure-JS
 * reader must read what the addon wrote, and patches of format minor 0 (gzip, a zero
 * codec field) must still apply.
 */
const tmp = makeTmp('rostore-patch-codecs-')
afterAll(tmp.cleanup)
// Three partitions of ~2.5 MB: each patch spans several 1 MiB blocks and many read chunks.
const { path, build } = patchBuilds(tmp.dir, { nodes: 3, partitions: 3, replication: 1, port: 7100 })
const patchRead = join(__dirname, '..', '..', '..', 'formats', 'store', 'patch', 'patch-read.js')

let d1: string
let d2: string
let m: VersionManifest

beforeAll(async () => {
  const v1 = new Map(Array.from({ length: 3000 }, (_, i) => [`key-${i}`, randomBytes(1500 + (i % 700)).toString('base64')]))
  const v2 = new Map(v1)
  for (let i = 0; i < 3000; i++) if (i % 10 !== 0) v2.set(`key-${i}`, randomBytes(1500 + (i % 500)).toString('base64'))
  for (let i = 0; i < 3000; i += 30) v2.delete(`key-${i}`)
  v2.set('added-empty', '')
  d1 = await build(v1, 1)
  d2 = await build(v2, 2)
  m = await patchAll(d1, d2)
})

async function opsOf(file: string): Promise<PatchOp[]> {
  const ops: PatchOp[] = []
  for await (const op of (await openPatch(file)).ops) ops.push(op)
  return ops
}

/** How many length-prefixed frames a zstd body holds. */
function zstdBlocks(body: Buffer): number {
  let n = 0
  for (let at = 0; at < body.length; n++) at += 4 + body.readUInt32LE(at)
  return n
}

function digest(ops: readonly PatchOp[]): string {
  const h = createHash('sha256')
  for (const o of ops)
    h.update(Buffer.from([o.op]))
      .update(o.key)
      .update(o.value ?? Buffer.alloc(0))
  return `${ops.length}:${h.digest('hex')}`
}

/** The same operations written again with `codec`. */
function rewrite(ops: readonly PatchOp[], partition: number, codec: PatchCodec): string {
  const file = path(`p${partition}-${codec}.patch`)
  const w = new PatchWriter(file, { partition, chunks: m.chunks, baseDataVersion: 1, dataVersion: 2 }, codec)
  for (const o of ops) {
    if (o.value === undefined) w.delete(o.key)
    else w.put(o.key, o.value)
  }
  w.finish()
  return file
}

async function rebuildsFullBuild(patchFile: string, partition: number): Promise<void> {
  const out = path('rebuilt')
  mkdirSync(out)
  await applyPatch({ baseDir: d1, patchFile, outDir: out, manifest: m, partition })
  const entry = m.partitionFiles[partition]!
  for (const f of entry.files) expect(readFileSync(join(out, f.name)).equals(readFileSync(join(d2, f.name)))).toBe(true)
  expect(readdirSync(out).length).toBe(entry.files.length)
}

test('the builder writes zstd bodies of several blocks here; gzip and zstd rebuild the same files from the same operations', async () => {
  for (const entry of m.partitionFiles) {
    const built = join(d2, entry.patch!.name)
    const header = decodePatchHeader(readFileSync(built).subarray(0, PATCH_HEADER_SIZE), built)
    // npm ci builds the addon, and libzstd ships with the machine: the builder's default is zstd.
    expect(header.codec).toBe('zstd')
    const ops = await opsOf(built)
    expect(ops.length).toBe(entry.patch!.ops)
    expect(zstdBlocks(readFileSync(built).subarray(PATCH_HEADER_SIZE))).toBeGreaterThan(1)
    for (const codec of ['gzip', 'zstd'] as const) {
      const file = rewrite(ops, entry.partition, codec)
      expect(decodePatchHeader(readFileSync(file), file).codec).toBe(codec)
      expect(digest(await opsOf(file))).toBe(digest(ops))
      await rebuildsFullBuild(file, entry.partition)
    }
  }
})

test('the pure-JS reader (ROSTORE_NATIVE=0, fzstd) reads the operations the addon wrote', async () => {
  const entry = m.partitionFiles[0]!
  const file = join(d2, entry.patch!.name)
  const script = `
    const { createHash } = require('node:crypto')
    const { openPatch } = require(${JSON.stringify(patchRead)})
    const { nativeFunctions } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'common', 'native.js'))})
    ;(async () => {
      if (nativeFunctions() !== undefined) throw new Error('the addon loaded')
      const h = createHash('sha256')
      let n = 0
      for await (const o of (await openPatch(${JSON.stringify(file)})).ops) {
        n++
        h.update(Buffer.from([o.op])).update(o.key).update(o.value ?? Buffer.alloc(0))
      }
      process.stdout.write(n + ':' + h.digest('hex'))
    })().catch((err) => { console.error(err); process.exit(1) })`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ROSTORE_NATIVE: '0' } })
  expect(r.status).toBe(0)
  expect(r.stdout).toBe(digest(await opsOf(file)))
  // It says once that it decodes without the addon.
  expect(r.stderr).toMatch(/"event":"zstd_fallback".*"decoder":"fzstd"/)
})

/** `file`'s bytes with its header rewritten by `edit` (CRC-32 of the header made again). */
function withHeader(
  file: string,
  edit: (h: ReturnType<typeof decodePatchHeader>) => Parameters<typeof encodePatchHeader>[0],
  body?: Buffer,
): string {
  const bytes = readFileSync(file)
  const head = encodePatchHeader(edit(decodePatchHeader(bytes, file)))
  const out = path('edited.patch')
  writeFileSync(out, Buffer.concat([head, body ?? bytes.subarray(PATCH_HEADER_SIZE)]))
  return out
}

test('a patch of format minor 0 (zero in the codec field, gzip) still applies', async () => {
  const entry = m.partitionFiles[1]!
  const gzip = rewrite(await opsOf(join(d2, entry.patch!.name)), entry.partition, 'gzip')
  const bytes = readFileSync(gzip)
  expect(bytes.readUInt16LE(10)).toBe(1)
  expect(bytes.readUInt32LE(20)).toBe(0)
  bytes.writeUInt16LE(0, 10)
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 60), 0) >>> 0, 60)
  const minor0 = path('minor0.patch')
  writeFileSync(minor0, bytes)
  await rebuildsFullBuild(minor0, entry.partition)
})

test('a zstd body cut inside a block, a block that is not a frame, a length past the body: RO_CORRUPT, no file left', async () => {
  const entry = m.partitionFiles[2]!
  const file = join(d2, entry.patch!.name)
  const body = readFileSync(file).subarray(PATCH_HEADER_SIZE)
  const cut = body.subarray(0, body.length - 100)
  const notFrame = Buffer.concat([Buffer.from([4, 0, 0, 0]), Buffer.from('junk'), body])
  const tooLong = Buffer.from(body)
  tooLong.writeUInt32LE(body.length, 0)
  for (const [bad, why] of [
    [cut, /a zstd block at body byte [1-9][0-9]* runs past the body's end/],
    [notFrame, /does not inflate/],
    [tooLong, /a zstd block at body byte 0 runs past the body's end/],
  ] as const) {
    // A header that agrees with the body, so the body's own reading is what refuses it.
    const edited = withHeader(file, (h) => ({ ...h, bodySize: bad.length, bodyCrc: crc32(bad, 0) >>> 0 }), bad)
    const out = path('out')
    mkdirSync(out)
    await expect(
      applyPatch({ baseDir: d1, patchFile: edited, outDir: out, manifest: m, partition: entry.partition }),
    ).rejects.toMatchObject({
      code: 'RO_CORRUPT',
      message: expect.stringMatching(why) as unknown,
    })
    expect(readdirSync(out)).toEqual([])
  }
})

test('a codec this version does not know is RO_BAD_FORMAT, before any body is read', async () => {
  const file = join(d2, m.partitionFiles[0]!.patch!.name)
  const bytes = readFileSync(file)
  bytes.writeUInt32LE(7, 20)
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 60), 0) >>> 0, 60)
  const bad = path('codec7.patch')
  writeFileSync(bad, bytes)
  await expect(openPatch(bad, 'p0.patch')).rejects.toMatchObject({
    code: 'RO_BAD_FORMAT',
    message: 'p0.patch: patch body codec 7 is not one this version reads',
  })
})
