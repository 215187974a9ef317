import { PeerEgress } from '../../../server/peers/peer-egress'
import { parsePartitionFetch } from '../../../server/routes/partition-fetch-body'
import { parseRange } from '../../../server/routes/peer-files'
import { isPeerFileName } from '../../../server/routes/route'

describe('peer file route pieces', () => {
  test('names: the manifest, the zstd dictionary and partition files only', () => {
    for (const ok of ['manifest.json', 'zstd.dict', 'p0-c0.data', 'p12-c3.index']) expect(isPeerFileName(ok)).toBe(true)
    for (const bad of [
      'metadata.json',
      'LIVE',
      '0.data',
      'p0-c0.data.part',
      '../p0-c0.data',
      'p01-c0.data',
      'p0-c0.dat',
      'zstd.dict.part',
      '../zstd.dict',
      '',
    ])
      expect(isPeerFileName(bad)).toBe(false)
  })

  test('ranges', () => {
    expect(parseRange(undefined, 100)).toBeUndefined()
    expect(parseRange('bytes=10-', 100)).toEqual({ first: 10, last: 99 })
    expect(parseRange('bytes=10-19', 100)).toEqual({ first: 10, last: 19 })
    expect(parseRange('bytes=10-1000', 100)).toEqual({ first: 10, last: 99 })
    expect(parseRange('bytes=100-', 100)).toBe('bad')
    expect(parseRange('bytes=20-10', 100)).toBe('bad')
    // Suffix and multiple ranges: the whole file.
    expect(parseRange('bytes=-10', 100)).toBeUndefined()
    expect(parseRange('bytes=0-1,5-6', 100)).toBeUndefined()
  })

  test('streams are bounded; a slot is given back once', () => {
    const egress = new PeerEgress(undefined, 2)
    const a = egress.open()
    const b = egress.open()
    expect(() => egress.open()).toThrow(expect.objectContaining({ code: 'RO_UNAVAILABLE' }))
    a()
    a()
    expect(egress.streams).toBe(1)
    egress.open()
    b()
    expect(egress.streams).toBe(1)
    expect(new PeerEgress(1000).bucket?.bytesPerSec).toBe(1000)
  })

  test('the fetch body: format 1 without the new fields; validated and bounded with them', () => {
    expect(parsePartitionFetch({ source: 'x' }, true)).toBeUndefined()
    expect(parsePartitionFetch({ fetchFrom: 'source' }, true)).toEqual({ fetchFrom: 'source', peers: [] })
    expect(parsePartitionFetch({ peers: [{ nodeId: 2, version: 3, partitions: [0, 4] }] }, true)).toEqual({
      fetchFrom: 'auto',
      peers: [{ nodeId: 2, version: 3, partitions: [0, 4] }],
    })
    const manifest = { format: 'rostore' }
    expect(parsePartitionFetch({ fetchFrom: 'peers', peers: [{ nodeId: 1 }], manifest }, false)?.manifest?.toString()).toBe(
      JSON.stringify(manifest),
    )
    const bad: [Record<string, unknown>, boolean][] = [
      [{ fetchFrom: 'maybe' }, true],
      [{ fetchFrom: 'auto' }, false],
      [{ fetchFrom: 'peers' }, false],
      [{ peers: 'node 1' }, true],
      [{ peers: Array.from({ length: 65 }, (_, i) => ({ nodeId: i })) }, true],
      [{ peers: [{ nodeId: -1 }] }, true],
      [{ peers: [{ nodeId: 1, url: 'http://x' }] }, true],
      [{ peers: [{ nodeId: 1, partitions: ['0'] }] }, true],
      [{ peers: [{ nodeId: 1, version: 0 }] }, true],
      [{ manifest: [] }, true],
      [{ manifest: { pad: 'x'.repeat(16 << 20) } }, true],
    ]
    for (const [body, hasSource] of bad)
      expect(() => parsePartitionFetch(body, hasSource)).toThrow(expect.objectContaining({ code: 'RO_BAD_REQUEST' }))
  })
})
