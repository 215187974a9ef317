import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSource } from '../../../fetcher/sources/file'
import { HttpSource } from '../../../fetcher/sources/http'
import { checkSource, openSource } from '../../../fetcher/sources/open-source'

describe('openSource', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rostore-open-'))
    await mkdir(join(dir, 'builds', 'a'), { recursive: true })
    await mkdir(join(dir, 'other'), { recursive: true })
    await symlink(join(dir, 'other'), join(dir, 'builds', 'link'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  test('picks the source by scheme', async () => {
    expect(await openSource(join(dir, 'builds'))).toBeInstanceOf(FileSource)
    expect(await openSource(`file://${dir}/builds`)).toBeInstanceOf(FileSource)
    const http = await openSource('http://user:secret@example.com/builds/x')
    expect(http).toBeInstanceOf(HttpSource)
    expect(http.describe('node-0/0.data')).toBe('http://example.com/builds/x/node-0/0.data')
    http.close?.()
    const https = await openSource('https://example.com/b/')
    expect(https).toBeInstanceOf(HttpSource)
    https.close?.()
  })

  test('refuses unknown schemes, queries and hidden dot segments', async () => {
    await expect(openSource('ftp://example.com/x')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('hdfs://nn/x')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('http://h/x?sig=1')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('http://h/b/x%2F..%2F..%2Fsecret')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
  })

  test('allow-list: whole path segments only, after normalising', async () => {
    const allowedSources = ['http://builds.example.com/out', join(dir, 'builds')]
    const ok = async (s: string): Promise<void> => {
      const src = await openSource(s, { allowedSources })
      src.close?.()
    }
    await ok('http://builds.example.com/out')
    await ok('http://BUILDS.example.com:80/out/store/v3/')
    await ok(join(dir, 'builds', 'a'))
    await ok(`file://${dir}/builds/a`)
    const refused = [
      'http://builds.example.com/out-old/x',
      'http://builds.example.com/out/../secret',
      'http://builds.example.com/out/%2e%2e/secret',
      'https://builds.example.com/out/x', // another scheme is another origin
      'http://builds.example.com.evil.org/out/x',
      'http://builds.example.com:8080/out/x',
      join(dir, 'builds-old'),
      join(dir, 'builds', '..', 'other'),
      join(dir, 'builds', 'link'), // a symlink leading out of the allowed tree
    ]
    for (const s of refused) {
      await expect(openSource(s, { allowedSources })).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    }
  })

  test('an empty allow-list refuses everything', async () => {
    await expect(openSource(dir, { allowedSources: [] })).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
  })

  test('a path that does not exist yet is judged by where its existing part leads', async () => {
    const allowedSources = [join(dir, 'builds')]
    // builds/link -> other: a missing directory below the link lies outside the allowed tree.
    await expect(openSource(join(dir, 'builds', 'link', 'not-yet', 'v1'), { allowedSources })).rejects.toMatchObject({
      code: 'RO_BAD_REQUEST',
    })
    const src = await openSource(join(dir, 'builds', 'a', 'not-yet'), { allowedSources })
    expect(src.describe()).toBe(join(dir, 'builds', 'a', 'not-yet'))
  })

  test('checkSource returns the canonical form: a local path with its symlinks resolved', async () => {
    expect(await checkSource(join(dir, 'builds', 'link'))).toEqual({ kind: 'file', key: await realpath(join(dir, 'other')) })
    expect(await checkSource('http://H.example.com/b/')).toEqual({ kind: 'http', key: 'http://h.example.com/b' })
  })
})
