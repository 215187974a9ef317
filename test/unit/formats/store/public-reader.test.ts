import { join } from 'node:path'
import { openStore, type StoreReader } from '../../../../index'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)

/**
 * The public entry's reader shows what a user reads with and no more: the framed batch
 * paths servers write wire replies with, and the benchmark's probe count, are on the
 * internal ServingReader only. The @ts-expect-error lines fail the build the day one of
 * them comes back on the public type.
 */
test('the public StoreReader reads values and hides the serving paths', async () => {
  const dir = join(tmp.dir, 'public')
  await makeNodeDir(dir, [
    ['a', '1'],
    ['b', ''],
  ])
  const reader: StoreReader = await openStore(dir)
  try {
    expect(reader.get('a')?.toString()).toBe('1')
    expect((await reader.getManyAsync(['b', 'c'])).map((v) => v?.toString())).toEqual(['', undefined])
    // @ts-expect-error framed wire paths are internal (ServingReader)
    expect(typeof reader.getManyFramedInto).toBe('function')
    // @ts-expect-error the probe count is the lookup benchmark's, not the public API's
    expect(typeof reader.lastProbes).toBe('number')
    // @ts-expect-error mapWindowBytes is a test-kit option (ReaderOptions), not an OpenOptions field
    const windowed = await openStore(dir, { mapWindowBytes: 1 << 16 })
    expect(windowed.get('a')?.toString()).toBe('1')
    windowed.close()
  } finally {
    reader.close()
  }
})
