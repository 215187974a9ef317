import { cpus } from 'node:os'
import { normalizeBuildOptions, type BuildOptions } from '../../../builder/build-options'
import { parseCluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'

const base: BuildOptions = {
  inputs: ['in.tsv'],
  format: 'tsv',
  cluster: parseCluster({
    name: 'c',
    nodes: [
      { id: 0, host: '127.0.0.1', port: 7000, partitions: [0] },
      { id: 1, host: '127.0.0.1', port: 7001, partitions: [1] },
    ],
  }),
  store: 's',
  output: 'out',
}

test('default workers: every core, but at most one per 64 MiB of memory budget', () => {
  expect(normalizeBuildOptions(base).workers).toBe(Math.min(cpus().length, 16))
  expect(normalizeBuildOptions({ ...base, memoryMb: 64 }).workers).toBe(1)
  expect(normalizeBuildOptions({ ...base, memoryMb: 8 }).workers).toBe(1)
  expect(normalizeBuildOptions({ ...base, memoryMb: 64, workers: 2 }).workers).toBe(2)
})

test.each([
  [{ replication: 3 }, /--replication 3/],
  [{ store: '../x' }, /bad store name/],
  [{ chunks: 0 }, /--chunks 0/],
  [{ version: 0 }, /--version 0/],
  [{ memoryMb: 0 }, /--memory-mb 0/],
])('%j is refused with RO_BAD_OPTION', (o, message) => {
  try {
    normalizeBuildOptions({ ...base, ...o })
    throw new Error('expected RO_BAD_OPTION')
  } catch (err) {
    expect(isStoreError(err, 'RO_BAD_OPTION')).toBe(true)
    expect((err as Error).message).toMatch(message)
  }
})
