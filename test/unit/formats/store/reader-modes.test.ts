import { spawnSync } from 'node:child_process'
import { readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isStoreError } from '../../../../common/errors'
import { cliPath } from '../../../../common/paths'
import { decodeValues, encodeValues } from '../../../../formats/wire/multiget'
import { RespWriter } from '../../../../formats/wire/resp-writer'
import { openServingReader, openStore } from '../../../../formats/store/read/store-reader'
import type { ValueFraming } from '../../../../formats/store/read/store-reader-api'
import { MULTIGET_FRAMING, respMgetFraming } from '../../../../formats/store/chunk/value-framing'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { openIn, READER_MODES } from './reader-modes'
import { codecByName } from '../../../../formats/store/chunk/codec'
import { nativeFunctions } from '../../../../common/native'
import type { Compression } from '../../../../formats/store/layout/metadata'

/** What the access modes add to the reader: options, batches, framing, windows, refusals at open. */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const MULTIGET: ValueFraming = {
  prefix: new Uint8Array(0),
  length: 'u32be',
  absent: Buffer.from([255, 255, 255, 255]),
  suffix: new Uint8Array(0),
}
const resp = (n: number): ValueFraming => ({
  prefix: Buffer.from(`*${n}\r\n`),
  length: 'resp',
  absent: Buffer.from('$-1\r\n'),
  suffix: Buffer.from('\r\n'),
})

test('the framing constants spell the wire formats', () => {
  expect(MULTIGET_FRAMING).toEqual({ ...MULTIGET, absent: new Uint8Array(MULTIGET.absent) })
  const r = respMgetFraming(3)
  expect([r.length, Buffer.from(r.prefix).toString(), Buffer.from(r.absent).toString(), Buffer.from(r.suffix).toString()]).toEqual([
    'resp',
    '*3\r\n',
    '$-1\r\n',
    '\r\n',
  ])
})

const valueOf = (i: number): string => (i % 11 === 0 ? '' : `v${i}:${'x'.repeat(i % 97)}`)

async function store(n: number, opts: Parameters<typeof makeNodeDir>[2] = {}): Promise<string> {
  const dir = tmp.fresh()
  await makeNodeDir(
    dir,
    Array.from({ length: n }, (_, i) => [`k${i}`, valueOf(i)] as [string, string]),
    opts,
  )
  return dir
}

describe.each(READER_MODES)('%s reader', (mode) => {
  test('reports its access mode', async () => {
    const r = await openIn(mode, await store(10))
    expect(r.accessMode).toBe(mode === 'pread' ? 'pread' : 'mmap')
    r.close()
  })

  test.each(['none', 'gzip'] as const)(
    '%s values: getMany answers in request order with repeats, absent keys and empty values; getManyFramed frames the same answers',
    async (compression) => {
      const dir = await store(3000, { chunks: 3, compression })
      const r = await openIn(mode, dir)
      const keys = ['k17', 'nope', 'k0', 'k2999', 'k17', Buffer.from('k5'), '', 'k1234']
      const want = keys.map((k) => {
        const i = Number(String(k).slice(1))
        return String(k).startsWith('k') && i < 3000 ? valueOf(i) : undefined
      })
      expect(r.getMany(keys).map((v) => v?.toString())).toEqual(want)
      const framed = r.getManyFramed(keys, MULTIGET)
      expect(framed).toEqual(encodeValues(r.getMany(keys)))
      expect(decodeValues(framed, keys.length).map((v) => v?.toString())).toEqual(want)
      const text = want.map((v) => (v === undefined ? '$-1\r\n' : `$${Buffer.byteLength(v)}\r\n${v}\r\n`)).join('')
      expect(r.getManyFramed(keys, resp(keys.length)).toString()).toBe(`*${keys.length}\r\n${text}`)
      // A byte budget: the same answer when it fits exactly, nothing when one byte short.
      expect(r.getManyFramed(keys, MULTIGET, framed.length)).toEqual(framed)
      expect(r.getManyFramed(keys, MULTIGET, framed.length - 1)).toBeUndefined()
      // Into a reply writer after bytes already there, growing it from a small buffer.
      const sink = new RespWriter(8)
      sink.simple('OK')
      const before = sink.length
      expect(r.getManyFramedInto(keys, resp(keys.length), sink)).toBe(sink.length - before)
      expect(r.getManyFramedInto(keys, MULTIGET, sink, framed.length)).toBe(framed.length)
      const mid = sink.length
      expect(r.getManyFramedInto(keys, MULTIGET, sink, framed.length - 1)).toBe(-1)
      expect(sink.length).toBe(mid)
      expect(sink.take().toString('latin1')).toBe(`+OK\r\n*${keys.length}\r\n${text}${framed.toString('latin1')}`)
      // One key at a time (a GET reply), from a writer with little room left: the values
      // longer than that are framed again after the writer grows.
      const one = new RespWriter(8)
      const bulk: ValueFraming = { ...resp(1), prefix: new Uint8Array(0) }
      const found = keys.map((k) => r.getFramedInto(k, bulk, one))
      expect(found).toEqual(want.map((v) => v !== undefined))
      expect(one.take().toString('latin1')).toBe(text)
      const u32 = new RespWriter(8)
      keys.forEach((k) => r.getFramedInto(k, { ...MULTIGET, prefix: Buffer.from('>') }, u32))
      expect(u32.take()).toEqual(Buffer.concat(keys.map((k) => Buffer.concat([Buffer.from('>'), r.getManyFramed([k], MULTIGET)]))))
      expect(r.getMany([])).toEqual([])
      r.close()
      expect(() => r.getMany(['k1'])).toThrow(expect.objectContaining({ code: 'RO_CONFLICT' }))
      expect(() => r.get('k1')).toThrow(expect.objectContaining({ code: 'RO_CONFLICT' }))
    },
  )

  test('a damaged record: getMany and getManyFramed throw RO_CORRUPT; with verifyRecords off the damaged bytes come back', async () => {
    const dir = await store(50, { chunks: 1 })
    const file = join(dir, '0.data')
    const b = readFileSync(file)
    // The last byte of k7's value: the key and the record header stay intact.
    const at = b.indexOf(valueOf(7)) + Buffer.byteLength(valueOf(7)) - 1
    b[at] = b[at]! ^ 0x01
    writeFileSync(file, b)
    const r = await openIn(mode, dir)
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`)
    expect(() => r.getMany(keys)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    expect(() => r.getManyFramed(keys, MULTIGET)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    const sink = new RespWriter(16)
    expect(() => r.getManyFramedInto(keys, MULTIGET, sink)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    expect(() => r.getFramedInto('k7', MULTIGET, sink)).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
    expect(sink.length).toBe(0)
    r.close()
    const unchecked = await openIn(mode, dir, { verifyRecords: false })
    const values = unchecked.getMany(keys)
    expect(values.map((v, i) => (v?.toString() === valueOf(i) ? '' : i)).filter((i) => i !== '')).toEqual([7])
    unchecked.close()
  })

  test('keys longer than any scratch buffer, and binary keys', async () => {
    const long = Buffer.alloc(70_000, 'k')
    const dir = tmp.fresh()
    await makeNodeDir(dir, [
      [long, 'long'],
      [Buffer.from([0, 1, 2, 255]), 'bin'],
      ['é-ü', 'utf8'],
    ])
    const r = await openIn(mode, dir)
    expect(r.get(long)?.toString()).toBe('long')
    expect(r.get(long.toString())?.toString()).toBe('long')
    expect(r.get(Buffer.from([0, 1, 2, 255]))?.toString()).toBe('bin')
    expect(r.get('é-ü')?.toString()).toBe('utf8')
    expect(r.getMany(['é-ü', long]).map((v) => v?.toString())).toEqual(['utf8', 'long'])
    r.close()
  })

  test('every preload mode opens and reads; preload none without index verification too', async () => {
    const dir = await store(2000, { chunks: 2 })
    for (const [preload, verifyIndex] of [
      ['index', true],
      ['all', true],
      ['none', true],
      ['none', false],
    ] as const) {
      const r = await openIn(mode, dir, { preload, verifyIndex })
      for (let i = 0; i < 2000; i += 37) expect(r.get(`k${i}`)?.toString()).toBe(valueOf(i))
      expect(r.get('absent')).toBeUndefined()
      r.close()
    }
  })

  test('opening yields to the event loop while it works through a large index', async () => {
    const dir = await store(200_000, { chunks: 1 })
    let ticks = 0
    let opening = true
    const tick = (): void => {
      ticks++
      if (opening) setImmediate(tick)
    }
    setImmediate(tick)
    const r = await openIn(mode, dir)
    opening = false
    // 200k entries = 3.2 MB of index: read and checked in several steps, the loop turning between them.
    expect(ticks).toBeGreaterThanOrEqual(3)
    expect(r.get('k199999')?.toString()).toBe(valueOf(199999))
    r.close()
  })

  test('truncated, emptied or extended files are refused at open', async () => {
    for (const [file, size] of [
      ['0.data', 100],
      ['0.data', 30],
      ['0.data', 0],
      ['0.index', 64 + 16 * 3],
      ['0.index', 10],
    ] as const) {
      const dir = await store(300, { chunks: 1 })
      truncateSync(join(dir, file), size)
      const err = await openIn(mode, dir).catch((e: unknown) => e)
      expect(isStoreError(err)).toBe(true)
      expect(['RO_CORRUPT', 'RO_BAD_FORMAT']).toContain((err as { code: string }).code)
    }
    const dir = await store(300, { chunks: 1 })
    writeFileSync(join(dir, '0.data'), Buffer.concat([readFileSync(join(dir, '0.data')), Buffer.alloc(10)]))
    expect(await openIn(mode, dir, { verifyIndex: false }).catch((e: unknown) => (e as { code: string }).code)).toBe('RO_CORRUPT')
  })
})

describe.each(READER_MODES.filter((m) => m !== 'pread'))('%s reader, windows', (mode) => {
  test('data and index files larger than one window: values straddling windows read back whole', async () => {
    const dir = tmp.fresh()
    const big = (i: number): Buffer => Buffer.alloc(40_000 + i * 1001, String.fromCharCode(97 + (i % 26)))
    const records: [string, Buffer][] = Array.from({ length: 40 }, (_, i) => [`big-${i}`, big(i)])
    for (let i = 0; i < 6000; i++) records.push([`small-${i}`, Buffer.from(valueOf(i))])
    await makeNodeDir(dir, records, { chunks: 1 })
    // 64 KiB windows: the ~2.5 MB data file spans ~40 of them, the 96 KB index two.
    const r = await openIn(mode, dir, { mapWindowBytes: 65536 })
    for (const [k, v] of records) expect(r.get(k)).toEqual(v)
    expect(r.getMany(records.slice(0, 50).map(([k]) => k))).toEqual(records.slice(0, 50).map(([, v]) => v))
    const keys = records.slice(0, 45).map(([k]) => k)
    expect(r.getManyFramed(keys, MULTIGET)).toEqual(encodeValues(records.slice(0, 45).map(([, v]) => v)))
    r.close()
  })
})

test('a caller writing into a returned value does not crash the process; that record then reads as RO_CORRUPT', async () => {
  const dir = await store(100, { chunks: 1 })
  const r = await openIn(READER_MODES[0]!, dir)
  const v = r.get('k5')!
  v.fill(0x21)
  if (r.accessMode === 'mmap') expect(() => r.get('k5')).toThrow(expect.objectContaining({ code: 'RO_CORRUPT' }))
  else expect(r.get('k5')?.toString()).toBe(valueOf(5))
  expect(r.get('k6')?.toString()).toBe(valueOf(6))
  r.close()
  // The files are untouched: a new reader reads the value as built.
  const again = await openStore(dir)
  expect(again.get('k5')?.toString()).toBe(valueOf(5))
  again.close()
})

test("access 'mmap' without the addon is refused with RO_BAD_OPTION; option values are checked", async () => {
  const dir = await store(10)
  if (!READER_MODES.includes('mmap')) {
    await expect(openStore(dir, { access: 'mmap' })).rejects.toMatchObject({ code: 'RO_BAD_OPTION' })
  } else {
    const r = await openStore(dir, { access: 'mmap' })
    expect(r.accessMode).toBe('mmap')
    r.close()
  }
  await expect(openServingReader(dir, { mapWindowBytes: 1000 })).rejects.toThrow(RangeError)
  await expect(openStore(dir, { preload: 'some' as 'all' })).rejects.toThrow(RangeError)
})

test('rostore inspect prints the access mode; ROSTORE_NATIVE=0 makes it pread', async () => {
  const dir = await store(10)
  const run = (env: NodeJS.ProcessEnv): Record<string, unknown> => {
    const r = spawnSync(process.execPath, [cliPath(), 'inspect', dir], { encoding: 'utf8', env: { ...process.env, ...env } })
    expect(r.status).toBe(0)
    return JSON.parse(r.stdout) as Record<string, unknown>
  }
  expect(run({ ROSTORE_NATIVE: '0' })['accessMode']).toBe('pread')
  expect(run({})['accessMode']).toBe(READER_MODES.includes('mmap') ? 'mmap' : 'pread')
})

describe.each(READER_MODES)('%s reader, stored values', (mode) => {
  const codecs: Compression[] = ['none', 'gzip', 'snappy', ...(nativeFunctions() ? (['zstd'] as const) : [])]
  test.each(codecs)('%s: getStored and getManyStored answer the bytes get() decompresses', async (compression) => {
    const r = await openIn(mode, await store(300, { compression, chunks: 3 }))
    try {
      expect(r.storedValues()).toEqual({ compression })
      const codec = codecByName(compression)
      const keys = [...Array.from({ length: 300 }, (_, i) => `k${i}`), 'absent']
      const stored = r.getManyStored(keys)
      expect(stored[300]).toBeUndefined()
      expect(r.getStored('absent')).toBeUndefined()
      for (let i = 0; i < 300; i++) {
        const one = r.getStored(keys[i]!)!
        expect(Buffer.from(one).equals(Buffer.from(stored[i]!))).toBe(true)
        expect(codec.decode(one).toString()).toBe(valueOf(i))
        // Compressed codecs store other bytes than the value (an empty value included: a frame or a header).
        if (compression === 'none') expect(one.toString()).toBe(valueOf(i))
        else expect(one.equals(Buffer.from(valueOf(i)))).toBe(false)
      }
    } finally {
      r.close()
    }
  })
})
