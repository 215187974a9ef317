import { cpSync, existsSync } from 'node:fs'
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isStoreError } from '../../../common/errors'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { nodeView, type VersionManifest } from '../../../formats/store/layout/partition-files'
import { downloadOrder } from '../../../fetcher/fetch-job'
import { fetchPartitions, type PartitionFetchOptions } from '../../../fetcher/partition-fetch'
import type { ChainLink } from '../../../fetcher/source-chain'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { Nginx } from '../../../testkit/peers/nginx'
import { json, startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { makePartitionOutput, placeVersion } from '../../../testkit/stores/partition-fixture'
import { StallProxy } from '../../../testkit/net/stall-proxy'
import { makeTmp } from '../../../testkit/stores/tmp'
import { writeLivePointer } from '../../../swapper/disk/live-pointer'

const TOKEN = 'peer-files-admin-token-0123456789'

/**
 * Format-2 fetches between real processes: nginx serves the build output, a real node
 * serves its installed copy through the peer file route, and the fetcher on this side
 * counts where every byte came from.
 */
describe('fetch by partition: peers, then the build output', () => {
  const tmp = makeTmp('rostore-partition-fetch-')
  let nginx: Nginx
  let peer: NodeProcess
  let good: VersionManifest
  let bad: VersionManifest
  let peerDir: string
  let n = 0
  const dest = (): string => join(tmp.dir, `dest-${++n}`)
  const base = (over: Partial<PartitionFetchOptions>): PartitionFetchOptions => ({
    fetchFrom: 'auto',
    nodeId: 0,
    destDir: dest(),
    expect: { store: 'users', version: 2 },
    peerToken: TOKEN,
    retryBaseDelayMs: 20,
    ...over,
  })

  beforeAll(async () => {
    const serve = join(tmp.dir, 'serve')
    // Two nodes at R=2: each holds every partition, so the peer can give all of them.
    good = await makePartitionOutput(join(serve, 'users-v2'), { store: 'users', version: 2, nodes: 2, chunks: 2 })
    bad = await makePartitionOutput(join(serve, 'bad-v2'), { store: 'bad', version: 2, nodes: 2, chunks: 1 })
    nginx = await Nginx.launch({ root: serve })
    const data = join(tmp.dir, 'peer-data')
    // A live format-1 version, and the format-2 copy beside it (not live).
    for (const store of ['users', 'bad']) {
      await makeNodeDir(join(data, store, 'version-1'), [['k', 'v']], { store, version: 1 })
      await writeLivePointer(join(data, store), 1)
    }
    peerDir = await placeVersion(join(data, 'users'), good, 1, join(serve, 'users-v2'))
    const badDir = await placeVersion(join(data, 'bad'), bad, 1, join(serve, 'bad-v2'))
    // A disk that went bad under the peer: one byte of one file flipped.
    const victim = join(badDir, 'p0-c0.data')
    const bytes = await readFile(victim)
    bytes[100] = (bytes[100] as number) ^ 0xff
    await writeFile(victim, bytes)
    peer = await startSingleNode({ dir: join(tmp.dir, 'peer'), dataDir: data, token: TOKEN, workers: 1 })
  })
  afterAll(async () => {
    await peer?.kill9()
    await nginx?.dispose()
    tmp.cleanup()
  })

  const fileUrl = (file: string, version = 2, store = 'users'): string => `/admin/stores/${store}/versions/${version}/files/${file}`
  const auth = { authorization: `Bearer ${TOKEN}` }
  const fromNginx = async (prefix: string): Promise<string[]> =>
    (await nginx.accessLog()).filter((e) => e.uri.startsWith(prefix)).map((e) => e.uri.slice(prefix.length))

  async function verify(destDir: string, m: VersionManifest): Promise<void> {
    const view = nodeView(m, 0)
    for (const f of view.files) expect(await checksumFile(join(destDir, f.name))).toBe(f.checksum)
    expect(JSON.parse(await readFile(join(destDir, 'metadata.json'), 'utf8'))).toEqual(JSON.parse(JSON.stringify(view)))
    expect(JSON.parse(await readFile(join(destDir, 'manifest.json'), 'utf8'))).toEqual(JSON.parse(JSON.stringify(m)))
  }

  test('peer file route: admin token, names, Range, unknown', async () => {
    const f = good.partitionFiles[1]?.files[1]
    if (f === undefined) throw new Error('fixture')
    expect((await peer.request(fileUrl(f.name))).status).toBe(401)
    expect((await peer.request(fileUrl(f.name), { headers: { authorization: 'Bearer wrong' } })).status).toBe(401)
    const whole = await peer.request(fileUrl(f.name), { headers: auth })
    expect(whole.status).toBe(200)
    expect(whole.body.equals(await readFile(join(peerDir, f.name)))).toBe(true)
    const part = await peer.request(fileUrl(f.name), { headers: { ...auth, range: 'bytes=1000-' } })
    expect(part.status).toBe(206)
    expect(part.headers['content-range']).toBe(`bytes 1000-${f.size - 1}/${f.size}`)
    expect(part.body.equals(whole.body.subarray(1000))).toBe(true)
    const beyond = await peer.request(fileUrl(f.name), { headers: { ...auth, range: `bytes=${f.size}-` } })
    expect(beyond.status).toBe(416)
    for (const name of [
      '..',
      '%2e%2e',
      '..%2Fmetadata.json',
      '%2Fetc%2Fpasswd',
      'metadata.json',
      'LIVE',
      'p0-c0.data.part',
      'p01-c0.data',
    ]) {
      const r = await peer.request(fileUrl(name), { headers: auth })
      expect([400, 404]).toContain(r.status)
      expect(r.body.toString()).not.toContain(tmp.dir)
    }
    expect((await peer.request(fileUrl('metadata.json'), { headers: auth })).status).toBe(400)
    const unknown = await peer.request(fileUrl(f.name, 7), { headers: auth })
    expect(unknown.status).toBe(404)
    expect(json<{ error: { code: string } }>(unknown).error.code).toBe('RO_NOT_FOUND')
    // A partition file the version does not hold: 404, not "not ready".
    const notHeld = await peer.request(fileUrl('p999-c0.data'), { headers: auth })
    expect(notHeld.status).toBe(404)
    expect(notHeld.body.toString()).not.toContain(tmp.dir)
    expect((await peer.request(fileUrl('manifest.json'), { headers: auth })).status).toBe(200)
  })

  test('every file a peer holds comes from the peer: zero bytes from the build output', async () => {
    const destDir = dest()
    const r = await fetchPartitions(base({ destDir, source: `${nginx.url}users-v2`, peers: [{ nodeId: 1, url: peer.url }] }))
    await verify(destDir, good)
    const total = nodeView(good, 0).files.reduce((a, f) => a + f.size, 0)
    expect(r.bytesFrom).toEqual({ source: 0, peer: total, link: 0 })
    expect(await fromNginx('/users-v2/')).toEqual(['metadata.json'])
  })

  test('a peer that serves wrong bytes is caught by the checksum and the build output serves that file', async () => {
    const destDir = dest()
    const left: ChainLink[] = []
    const r = await fetchPartitions(
      base({
        destDir,
        source: `${nginx.url}bad-v2`,
        peers: [{ nodeId: 1, url: peer.url }],
        expect: { store: 'bad', version: 2 },
        onLinkFailed: (l, err) => {
          left.push(l)
          expect(isStoreError(err, 'RO_CHECKSUM_MISMATCH')).toBe(true)
        },
      }),
    )
    await verify(destDir, bad)
    expect(left.map((l) => l.from)).toEqual(['peer'])
    expect(r.filesFrom.source).toBe(1)
    expect((await fromNginx('/bad-v2/')).filter((u) => u !== 'metadata.json')).toEqual(['p0-c0.data'])
  })

  test('a peer that stalls is cut by the stall guard and the build output serves the file', async () => {
    const proxy = await StallProxy.start(peer.port, { stallAfterBytes: 1000, only: /p1-c1\.data/ })
    try {
      const destDir = dest()
      const left: ChainLink[] = []
      const r = await fetchPartitions(
        base({
          destDir,
          source: `${nginx.url}users-v2`,
          peers: [{ nodeId: 1, url: proxy.url }],
          stallTimeoutMs: 500,
          onLinkFailed: (l) => left.push(l),
        }),
      )
      await verify(destDir, good)
      expect(left.map((l) => l.label)).toEqual(['node 1'])
      expect(r.filesFrom.source).toBe(1)
    } finally {
      await proxy.close()
    }
  })

  test('a failed fetch keeps what it verified: the next fetch of the same data moves only the rest', async () => {
    const src = join(tmp.dir, 'serve', 'resume-v2')
    cpSync(join(tmp.dir, 'serve', 'users-v2'), src, { recursive: true })
    const files = downloadOrder(nodeView(good, 0).files)
    const total = files.reduce((a, f) => a + f.size, 0)
    const last = files[files.length - 1]!
    const saved = await readFile(join(src, last.name))
    await rm(join(src, last.name))
    const resumeDir = join(tmp.dir, 'resume-0')
    const first = await fetchPartitions(
      base({ destDir: dest(), source: `${nginx.url}resume-v2`, fetchFrom: 'source', resumeDir, concurrency: 1 }),
    ).catch((err: unknown) => err)
    expect(isStoreError(first, 'RO_FETCH_FAILED')).toBe(true)
    // Every file before the missing one was verified, and kept; never a metadata.json.
    expect((await readdir(resumeDir)).sort()).toEqual(['manifest.json', ...files.slice(0, -1).map((f) => f.name)].sort())
    await writeFile(join(src, last.name), saved)
    const destDir = dest()
    const r = await fetchPartitions(base({ destDir, source: `${nginx.url}resume-v2`, fetchFrom: 'source', resumeDir }))
    await verify(destDir, good)
    expect(r.bytesFrom).toEqual({ source: last.size, peer: 0, link: total - last.size })
    expect(existsSync(resumeDir)).toBe(false)
  })

  test('a file of an installed version of the same data is hardlinked: no bytes move', async () => {
    const destDir = dest()
    const r = await fetchPartitions(base({ destDir, source: `${nginx.url}users-v2`, reuseDirs: [peerDir] }))
    await verify(destDir, good)
    expect(r.bytesFrom.source + r.bytesFrom.peer).toBe(0)
    expect(r.filesFrom.link).toBe(nodeView(good, 0).files.length)
    const f = 'p0-c0.data'
    expect((await stat(join(destDir, f))).ino).toBe((await stat(join(peerDir, f))).ino)
  })

  test('repair from peers with the build output gone; a partition no peer holds fails clearly', async () => {
    const destDir = dest()
    const r = await fetchPartitions(base({ destDir, fetchFrom: 'peers', peers: [{ nodeId: 1, url: peer.url }] }))
    await verify(destDir, good)
    expect(r.bytesFrom.source).toBe(0)
    const partial = fetchPartitions(base({ fetchFrom: 'peers', peers: [{ nodeId: 1, url: peer.url, partitions: [0, 1] }] }))
    await expect(partial).rejects.toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringMatching(/no source holds partitions 2, 3/),
    })
  })
})
