import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nativeFunctions } from '../../../common/native'
import { writeFileAtomic } from '../../../swapper/disk/live-pointer'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * writeFileAtomic's two paths: the addon's one-job write (writeFileDurably) when it is
 * loaded, the step-by-step one otherwise (ROSTORE_NATIVE=0: `npm run test:pread` runs this
 * file too). Same observable behaviour; the addon's own contract is checked directly.
 */
const tmp = makeTmp('rostore-durable-')
afterAll(() => tmp.cleanup())
const native = nativeFunctions()

test('an error names the file it could not write, and leaves nothing behind', async () => {
  const d = tmp.fresh()
  await expect(writeFileAtomic(join(d, 'missing'), 'LIVE', '1\n')).rejects.toMatchObject({
    code: 'RO_IO',
    message: expect.stringContaining(join(d, 'missing', 'LIVE')),
  })
  mkdirSync(join(d, 'STALE', 'blocker'), { recursive: true }) // renaming a file over a non-empty directory fails
  await expect(writeFileAtomic(d, 'STALE', 'x')).rejects.toMatchObject({ code: 'RO_IO' })
  expect(readdirSync(d).sort()).toEqual(['STALE'])
})

test('bytes and strings are written as given, the last write wins', async () => {
  const d = tmp.fresh()
  await writeFileAtomic(d, 'PUSH', Buffer.from([0, 1, 2, 255]))
  expect([...readFileSync(join(d, 'PUSH'))]).toEqual([0, 1, 2, 255])
  await writeFileAtomic(d, 'PUSH', 'é\n')
  expect(readFileSync(join(d, 'PUSH'), 'utf8')).toBe('é\n')
  await writeFileAtomic(d, 'PUSH', '')
  expect(readFileSync(join(d, 'PUSH'), 'utf8')).toBe('')
  expect(readdirSync(d)).toEqual(['PUSH'])
})

;(native ? describe : describe.skip)('the addon’s writeFileDurably', () => {
  // Looked up in the tests: a skipped describe still runs its body.
  const write: NonNullable<typeof native>['writeFileDurably'] = (...args) => native!.writeFileDurably(...args)

  test('stopAfter 1 leaves the synced temp file and the old file untouched; 2 stops after the rename', async () => {
    const d = tmp.fresh()
    writeFileSync(join(d, 'LIVE'), 'old')
    await write(d, '.tmp-a', 'LIVE', Buffer.from('new'), 1)
    expect(readFileSync(join(d, 'LIVE'), 'utf8')).toBe('old')
    expect(readFileSync(join(d, '.tmp-a'), 'utf8')).toBe('new')
    await write(d, '.tmp-b', 'LIVE', Buffer.from('newer'), 2)
    expect(readFileSync(join(d, 'LIVE'), 'utf8')).toBe('newer')
    expect(readdirSync(d).sort()).toEqual(['.tmp-a', 'LIVE'])
  })

  test('the bytes are copied when the call is made', async () => {
    const d = tmp.fresh()
    const bytes = Buffer.from('abc')
    const done = write(d, '.tmp-c', 'F', bytes, 0)
    bytes.fill(0x7a)
    await done
    expect(readFileSync(join(d, 'F'), 'utf8')).toBe('abc')
  })

  test('errors carry the errno name and the step; a temp file it did not create is not removed', async () => {
    const d = tmp.fresh()
    await expect(write(join(d, 'nope'), '.tmp-d', 'F', Buffer.from('x'), 0)).rejects.toMatchObject({ code: 'ENOENT', syscall: 'opendir' })
    writeFileSync(join(d, '.tmp-e'), 'someone else’s')
    await expect(write(d, '.tmp-e', 'F', Buffer.from('x'), 0)).rejects.toMatchObject({ code: 'EEXIST', syscall: 'open' })
    expect(readFileSync(join(d, '.tmp-e'), 'utf8')).toBe('someone else’s')
    mkdirSync(join(d, 'G', 'blocker'), { recursive: true })
    await expect(write(d, '.tmp-f', 'G', Buffer.from('x'), 0)).rejects.toMatchObject({ syscall: 'rename' })
    expect(readdirSync(d).sort()).toEqual(['.tmp-e', 'G'])
  })

  test('names must be plain file names inside the directory (the addon throws, writes nothing)', () => {
    const d = tmp.fresh()
    for (const [t, n] of [
      ['../t', 'F'],
      ['t', 'a/F'],
      ['t', '..'],
      ['.', 'F'],
      ['', 'F'],
      ['same', 'same'],
      ['t\0x', 'F'],
    ]) {
      expect(() => write(d, t as string, n as string, Buffer.from('x'), 0)).toThrow(/^writeFileDurably: /)
    }
    expect(() => write('', 't', 'F', Buffer.from('x'), 0)).toThrow(/^writeFileDurably: /)
    expect(() => write(d, 't', 'F', Buffer.from('x'), 3 as 0)).toThrow(/^writeFileDurably: /)
    expect(readdirSync(d)).toEqual([])
  })
})
