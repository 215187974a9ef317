import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../../../builder/build-options'
import { buildOnRay } from '../../../../../builder/engines/ray/ray-build'
import { readManifest } from '../../../../../formats/store/layout/manifest-io'
import { writeInput } from '../../../../../testkit/stores/input-files'
import { expectSameTree } from '../../../../../testkit/stores/file-tree'
import { startRayCluster, type RayCluster } from '../../../../../testkit/peers/ray-cluster'
import { makeTmp } from '../../../../../testkit/stores/tmp'
import { ENGINE_TEST_CLUSTER } from '../../../../../testkit/stores/engine-inputs'

// A real Ray cluster (a head and two one-CPU workers, loopback only), as in ray-build.test.ts.
const tmp = makeTmp('rostore-ray-p-')
let cluster: RayCluster | undefined
beforeAll(async () => {
  cluster = await startRayCluster({ dir: join(tmp.dir, 'ray') })
}, 240_000)
afterAll(async () => {
  await cluster?.stop()
  tmp.cleanup()
})

const clusterFile = ENGINE_TEST_CLUSTER

test.each(['tsv', 'parquet'] as const)(
  'layout partitions, %s input: the Ray build is byte-identical to rostore build',
  async (format) => {
    const input = join(tmp.dir, `in-${format}`)
    mkdirSync(input)
    for (let f = 0; f < 2; f++)
      await writeInput(
        join(input, `part-${f}.${format}`),
        format,
        Array.from({ length: 1500 }, (_, i) => [`key-${i % 5 === 0 ? i % 40 : i + f * 1500}`, `v${f}-${i} ${'x'.repeat(i % 50)}`]),
      )
    const o: BuildOptions = {
      inputs: [input],
      format,
      cluster: clusterFile,
      store: 'st',
      output: join(tmp.dir, `local-${format}`),
      version: 7,
      replication: 2,
      layout: 'partitions',
      chunks: 2,
      onDuplicate: 'last',
    }
    await buildStore({ ...o, workers: 2 })
    const rayOut = join(tmp.dir, `ray-${format}`)
    const s = await buildOnRay({
      build: { ...o, output: rayOut },
      address: cluster!.address,
      python: cluster!.python,
      reducers: 3,
      splitBytes: format === 'parquet' ? 1 : 40 << 10,
      onProgress: () => {},
    })
    expectSameTree(o.output, rayOut)
    expect(s.finalize.layout).toBe('partitions')
    expect(s.job.records).toBe(3000)
    const m = await readManifest(rayOut)
    expect(m.partitionFiles).toHaveLength(9)
    expect(m.records).toBe(s.finalize.inputRecords - s.finalize.duplicates)
  },
  180_000,
)
