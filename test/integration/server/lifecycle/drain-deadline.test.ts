import { existsSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { encodeKeys } from '../../../../formats/wire/multiget'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'

const TOKEN = 'drain-token-0123456789abc'
const VALUE_BYTES = 64 << 10
const KEYS = 100

/**
 * Regression: two multi-gets whose clients never read kept version 1
 * open and on disk through later pushes, because retention waited for their readers to
 * drain with no deadline. Now the drain has one (--version-drain-ms): the stalled requests
 * are cut and retention deletes the old version.
 */
describe.each([1, 2])('a client that stops reading cannot keep an old version on disk (--workers %i)', (workers) => {
  const tmp = makeTmp('rostore-drain-')
  let node: NodeProcess
  const stalled: Socket[] = []
  afterAll(async () => {
    for (const s of stalled) s.destroy()
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('retention proceeds past requests stalled on the replaced version', async () => {
    const src: string[] = []
    for (const v of [1, 2, 3]) {
      const dir = join(tmp.dir, `src-${v}`)
      const recs: [string, Buffer][] = Array.from({ length: KEYS }, (_, i) => [`k${i}`, Buffer.alloc(VALUE_BYTES, 48 + v)])
      await makeNodeDir(dir, recs, { store: 'big', version: v, chunks: 2 })
      src.push(dir)
    }
    const dataDir = join(tmp.dir, 'data')
    node = await startSingleNode({
      dir: tmp.dir,
      dataDir,
      token: TOKEN,
      keepVersions: 0,
      workers,
      extraArgs: ['--version-drain-ms', '500'],
    })
    await node.install('big', src[0]!, { swap: true })

    // Each request asks for 1,000 values of 64 KiB (64 MiB): far more than socket buffers
    // hold, so the node blocks on back pressure while holding its lease on version 1.
    const body = encodeKeys(Array.from({ length: 1000 }, (_, i) => `k${i % KEYS}`))
    for (let i = 0; i < 2; i++) {
      const s = connect(node.port, '127.0.0.1')
      await new Promise<void>((resolve) => s.once('connect', resolve))
      // Readable mode without read(): the first bytes arrive, then TCP back pressure.
      const started = new Promise<string>((resolve) => s.once('readable', () => resolve(String(s.read(12)))))
      s.write(`POST /stores/big/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)
      s.write(body)
      stalled.push(s)
      expect(await started).toBe('HTTP/1.1 200')
    }
    // Both responses have started on version 1, so both hold it while version 2 goes live.
    await node.install('big', src[1]!, { swap: true })
    await node.install('big', src[2]!, { swap: true })

    const v1 = join(dataDir, 'big', 'version-1')
    for (let i = 0; i < 600 && existsSync(v1); i++) await new Promise((r) => setTimeout(r, 50))
    expect(existsSync(v1)).toBe(false)
    // Both stalled requests were still reading version 1 when its deadline passed, and were cut
    // (one event per serving process that held some).
    const cut = (): number =>
      node
        .events()
        .filter((e) => e['event'] === 'drain-deadline' && e['version'] === 1)
        .reduce((n, e) => n + Number(e['requestsCut']), 0)
    await node.waitForEvent(() => cut() >= 2)
    expect(cut()).toBe(2)
    // The stalled connections were cut, and the node still answers.
    expect((await node.request('/stores/big/keys/k1')).headers['x-rostore-version']).toBe('3')
  })
})
