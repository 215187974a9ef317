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
    expect(http.describe('node-0/0.data')).toBe('http://[redacted]@example.com/builds/x/node-0/0.data')
    http.close?.()
    // A token in the query goes with every file's request; messages show it redacted.
    const sas = await openSource('https://acct.example.com/c/builds?sv=2024&sig=S3CRET')
    expect(sas.describe('node-0/0.data')).toBe('https://acct.example.com/c/builds/node-0/0.data?[redacted]')
    sas.close?.()
    const s3 = await openSource('s3://bucket/builds/v1/')
    expect(s3.describe('node-0/0.data')).toBe('s3://bucket/builds/v1/node-0/0.data')
    const https = await openSource('https://example.com/b/')
    expect(https).toBeInstanceOf(HttpSource)
    https.close?.()
  })

  test('refuses unknown schemes, fragments, bad s3:// URLs and hidden dot segments, naming no credentials', async () => {
    await expect(openSource('ftp://example.com/x')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('hdfs://nn/x')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('http://h/x#frag')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('s3://bucket/a/../b')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('s3://key:secret@bucket/a')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('s3://b/x?X-Amz-Signature=S3CRET')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    const refusal = await openSource('ftp://u:S3CRET@h/x?sig=S3CRET').catch((err: Error) => err)
    expect(String(refusal)).not.toContain('S3CRET')
    await expect(openSource('http://h/b/x%2F..%2F..%2Fsecret')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(openSource('')).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
  })

  test('allow-list: whole path segments only, after normalising', async () => {
    const allowedSources = ['http://builds.example.com/out', join(dir, 'builds'), 's3://bucket/builds']
    const ok = async (s: string): Promise<void> => {
      const src = await openSource(s, { allowedSources })
      src.close?.()
    }
    await ok('http://builds.example.com/out')
    await ok('http://BUILDS.example.com:80/out/store/v3/')
    await ok(join(dir, 'builds', 'a'))
    await ok(`file://${dir}/builds/a`)
    // The query is not part of the match: a presigned or token URL under an allowed path is allowed.
    await ok('http://builds.example.com/out/v3?sig=abc&se=2030')
    await checkSource('s3://bucket/builds/v1/', { allowedSources: ['s3://bucket/builds'] })
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
      'http://builds.example.com/outx?sig=1',
      's3://bucket/builds-old/v1',
      's3://other/builds/v1',
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
