import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { cliPath } from '../../../../common/paths'
import { decodeValues, encodeKeys } from '../../../../formats/wire/multiget'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { json, startSingleNode } from '../../../../testkit/cluster/node-process'
import { KEY_COUNT, keyOf, makeVersions, STORE, valueOf } from '../fixture'

const TOKEN = 'preload-token-0123456789'

/** `rostore serve --preload`: every warm-up serves the same values, in one process or several. */
describe('rostore serve --preload (real processes)', () => {
  const tmp = makeTmp('rostore-preload-')
  afterAll(tmp.cleanup)

  test.each([
    ['all', 1],
    ['all', 2],
    ['none', 2],
    ['index', 1],
  ] as const)('--preload %s with %i serving process(es): /status says so, and reads and swaps answer', async (preload, workers) => {
    const dir = join(tmp.dir, `${preload}-${workers}`)
    const src = await makeVersions(dir, [1, 2])
    const node = await startSingleNode({ dir, token: TOKEN, workers, extraArgs: ['--preload', preload] })
    try {
      await node.install(STORE, src[1]!, { swap: true })
      await node.install(STORE, src[2]!, { swap: true })
      const status = json<{ node: { preload: string }; stores: { version: number }[] }>(await node.request('/status'))
      expect(status.node.preload).toBe(preload)
      expect(status.stores[0]!.version).toBe(2)
      for (const i of [0, 7, KEY_COUNT - 1]) {
        const r = await node.request(`/stores/${STORE}/keys/${keyOf(i)}`)
        expect([r.status, r.body.toString()]).toEqual([200, valueOf(2, i)])
      }
      const ids = Array.from({ length: KEY_COUNT }, (_, i) => i)
      const keys = [...ids.map(keyOf), 'absent-key']
      const mg = await node.request(`/stores/${STORE}/multi-get`, { method: 'POST', body: encodeKeys(keys.map((k) => Buffer.from(k))) })
      expect(mg.status).toBe(200)
      expect(decodeValues(mg.body, keys.length).map((v) => v?.toString())).toEqual([...ids.map((i) => valueOf(2, i)), undefined])
    } finally {
      await node.kill9()
    }
  })

  test('an unknown --preload is refused before anything starts, naming the choices', () => {
    const r = spawnSync(
      process.execPath,
      [cliPath(), 'serve', '--cluster', join(tmp.dir, 'none.json'), '--node-id', '0', '--data-dir', tmp.dir, '--preload', 'most'],
      { encoding: 'utf8', timeout: 30_000 },
    )
    expect(r.status).not.toBe(0)
    expect(r.stderr).toMatch(/preload/)
    expect(r.stderr).toMatch(/index.*all.*none/s)
  })
})
