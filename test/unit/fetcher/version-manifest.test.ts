import { join } from 'node:path'
import { readFile } from 'node:fs/promises'
import { parseVersionManifest } from '../../../fetcher/version-manifest'
import { makePartitionOutput } from '../../../testkit/stores/partition-fixture'
import { makeTmp } from '../../../testkit/stores/tmp'

describe('parseVersionManifest', () => {
  const tmp = makeTmp('rostore-version-manifest-')
  let good: Record<string, unknown>
  beforeAll(async () => {
    await makePartitionOutput(tmp.dir, { store: 'users', version: 4, nodes: 2, chunks: 1, dataBytes: 10, indexBytes: 10 })
    good = JSON.parse(await readFile(join(tmp.dir, 'metadata.json'), 'utf8')) as Record<string, unknown>
  })
  afterAll(() => tmp.cleanup())

  const bytes = (m: unknown): Buffer => Buffer.from(JSON.stringify(m))
  const withFile = (name: unknown): Record<string, unknown> => {
    const m = structuredClone(good) as { partitionFiles: { files: { name: unknown }[] }[] }
    ;(m.partitionFiles[1] as { files: { name: unknown }[] }).files[0] = { ...(m.partitionFiles[1]?.files[0] ?? {}), name }
    return m as unknown as Record<string, unknown>
  }

  test('a good manifest is taken, and held to the expected store and version', () => {
    expect(parseVersionManifest(bytes(good), 'm', { store: 'users', version: 4 }).partitionFiles).toHaveLength(4)
    expect(() => parseVersionManifest(bytes(good), 'm', { store: 'other' })).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    expect(() => parseVersionManifest(bytes(good), 'm', { version: 5 })).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
  })

  test.each(['../p1-c0.index', '/etc/passwd', 'p1-c0.index/../../x', 'p0-c0.index', 'p1-c5.index', 'metadata.json', 7])(
    'file name %p is refused without being quoted',
    (name) => {
      let err: unknown
      try {
        parseVersionManifest(bytes(withFile(name)), 'the manifest')
      } catch (e) {
        err = e
      }
      expect(err).toMatchObject({ code: 'RO_BAD_REQUEST' })
      if (typeof name === 'string') expect((err as Error).message).not.toContain(name)
    },
  )

  test('not JSON, another format, a broken ring', () => {
    expect(() => parseVersionManifest(Buffer.from('<html>'), 'm')).toThrow(expect.objectContaining({ code: 'RO_FETCH_FAILED' }))
    expect(() => parseVersionManifest(bytes({ ...good, formatMajor: 1 }), 'm')).toThrow(expect.objectContaining({ code: 'RO_BAD_FORMAT' }))
    expect(() => parseVersionManifest(bytes({ ...good, partitions: 5 }), 'm')).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    expect(() => parseVersionManifest(bytes({ ...good, replication: 3 }), 'm')).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
    expect(() => parseVersionManifest(bytes({ ...good, dataVersion: 9 }), 'm')).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
  })
})
