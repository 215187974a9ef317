import { parseManifest } from '../../../fetcher/manifest'
import type { FileEntry } from '../../../formats/store/layout/metadata'
import { fixtureMetadata } from '../../../testkit/stores/fetch-fixture'

const H = '0123456789abcdef'
const goodFiles: FileEntry[] = [
  { name: '0.data', size: 10, checksum: H },
  { name: '0.index', size: 0, checksum: H },
]
const good = fixtureMetadata({ nodeId: 2, store: 'users', version: 7, chunks: 1, files: goodFiles })
const parse = (m: unknown, want = { nodeId: 2 }): unknown => parseManifest(Buffer.from(JSON.stringify(m)), 'src/node-2/metadata.json', want)

describe('parseManifest', () => {
  test('accepts a valid manifest', () => {
    expect(parse(good)).toEqual(good)
    expect(parse(good, { nodeId: 2, store: 'users', version: 7 } as never)).toEqual(good)
  })

  test('unparsable bytes are RO_FETCH_FAILED with the reason', () => {
    expect(() => parseManifest(Buffer.from('<html>oops'), 'x/metadata.json', { nodeId: 0 })).toThrow(
      expect.objectContaining({ code: 'RO_FETCH_FAILED', message: expect.stringContaining('not valid JSON') }),
    )
  })

  test.each(['../x', '/etc/passwd', '..', 'metadata.json', '0.data/../../x', '0.data.part', '01.data', 'x.index', '0.index\u0000', ''])(
    'refuses file name %j with RO_BAD_REQUEST',
    (name) => {
      const m = { ...good, files: [{ name, size: 1, checksum: H }, ...goodFiles] }
      expect(() => parse(m)).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST', message: expect.stringContaining('file name') }))
    },
  )

  test.each<[string, Record<string, unknown>]>([
    ['negative size', { files: [{ name: '0.data', size: -1, checksum: H }, goodFiles[1]] }],
    ['fractional size', { files: [{ name: '0.data', size: 1.5, checksum: H }, goodFiles[1]] }],
    ['size as a string', { files: [{ name: '0.data', size: '10', checksum: H }, goodFiles[1]] }],
    ['bad checksum', { files: [{ name: '0.data', size: 1, checksum: 'ABC' }, goodFiles[1]] }],
    ['unknown algorithm', { checksumAlgorithm: 'md5' }],
    ['another node', { nodeId: 3 }],
    ['not rostore', { format: 'other' }],
    ['duplicate file', { files: [...goodFiles, goodFiles[0]] }],
    ['missing chunk file', { files: [goodFiles[0]] }],
  ])('refuses %s with RO_BAD_REQUEST', (_label, patch) => {
    expect(() => parse({ ...good, ...patch })).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
  })

  test('expected store and version must match', () => {
    expect(() => parse(good, { nodeId: 2, store: 'orders' } as never)).toThrow(
      expect.objectContaining({ code: 'RO_BAD_REQUEST', message: expect.stringContaining('orders') }),
    )
    expect(() => parse(good, { nodeId: 2, version: 8 } as never)).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
  })

  test('an unknown format major is RO_BAD_FORMAT', () => {
    expect(() => parse({ ...good, formatMajor: 99 })).toThrow(expect.objectContaining({ code: 'RO_BAD_FORMAT' }))
  })
})
