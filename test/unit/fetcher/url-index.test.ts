import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { openSource } from '../../../fetcher/sources/open-source'
import type { FetchSource } from '../../../fetcher/sources/source'
import { UrlIndexSource, urlIndexJson } from '../../../fetcher/sources/url-index'

/** A server that answers only URLs carrying the query it gave them, as a presigned store does. */
let server: http.Server
let base: string
const objects = new Map<string, { query: string; body: string }>()
const asked: string[] = []

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    asked.push(`${url.pathname}${url.search}`)
    const o = objects.get(url.pathname)
    if (o === undefined) res.writeHead(404).end()
    else if (url.search !== `?${o.query}`) res.writeHead(403).end()
    else res.writeHead(200, { 'content-length': Buffer.byteLength(o.body) }).end(o.body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const files = new Map([
    ['node-0/metadata.json', `${base}/pub/node-0/metadata.json?sig=FILE0SECRET`],
    ['node-0/0.data', `${base}/pub/node-0/0.data?sig=FILE1SECRET`],
  ])
  objects.set('/pub/node-0/metadata.json', { query: 'sig=FILE0SECRET', body: '{"meta":1}' })
  objects.set('/pub/node-0/0.data', { query: 'sig=FILE1SECRET', body: 'chunk bytes' })
  objects.set('/pub/build.urls.json', { query: 'sig=INDEXSECRET', body: urlIndexJson(files) })
  objects.set('/pub/outside.urls.json', {
    query: 'sig=INDEXSECRET',
    body: urlIndexJson(new Map([['node-0/metadata.json', `${base}/private/x?sig=OTHERSECRET`]])),
  })
  objects.set('/pub/bad.urls.json', { query: 'sig=INDEXSECRET', body: '{"kind":"something-else","files":{}}' })
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

async function readAll(source: FetchSource, name: string): Promise<string> {
  const res = await source.read(name, { start: 0, signal: new AbortController().signal })
  const parts: Buffer[] = []
  for await (const c of res.stream) parts.push(c)
  return Buffer.concat(parts).toString()
}

test('an http(s) source ending in .urls.json is an index: each file is read at its own URL, shown redacted', async () => {
  const source = await openSource(`${base}/pub/build.urls.json?sig=INDEXSECRET`)
  try {
    expect(source).toBeInstanceOf(UrlIndexSource)
    expect(source.describe('node-0/0.data')).toBe(`${base}/pub/build.urls.json?[redacted] (node-0/0.data)`)
    expect(await readAll(source, 'node-0/metadata.json')).toBe('{"meta":1}')
    expect(await readAll(source, 'node-0/0.data')).toBe('chunk bytes')
    expect(source.describe('node-0/0.data')).toBe(`${base}/pub/node-0/0.data?[redacted]`)
    // The index is read once; each file with its own query.
    expect(asked.filter((a) => a.startsWith('/pub/build.urls.json'))).toHaveLength(1)
    expect(asked).toContain('/pub/node-0/0.data?sig=FILE1SECRET')
    const missing = await source.read('node-1/metadata.json', { start: 0, signal: new AbortController().signal }).catch((e: Error) => e)
    expect(missing).toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringMatching(/the index has no URL for node-1\/metadata\.json/),
    })
    expect(String(missing)).not.toContain('SECRET')
  } finally {
    source.close?.()
  }
})

test('every URL of the index is held to the allow-list; a file that is not an index is refused; no query in any message', async () => {
  const allowedSources = [`${base}/pub`]
  const outside = await openSource(`${base}/pub/outside.urls.json?sig=INDEXSECRET`, { allowedSources })
  const refused = await readAll(outside, 'node-0/metadata.json').catch((e: Error) => e)
  outside.close?.()
  expect(refused).toMatchObject({ code: 'RO_BAD_REQUEST', message: expect.stringMatching(/not under an allowed source/) })
  expect(String(refused)).not.toContain('SECRET')
  expect(asked.some((a) => a.startsWith('/private/'))).toBe(false)

  const bad = await openSource(`${base}/pub/bad.urls.json?sig=INDEXSECRET`)
  const notIndex = await readAll(bad, 'node-0/metadata.json').catch((e: Error) => e)
  bad.close?.()
  expect(notIndex).toMatchObject({ code: 'RO_FETCH_FAILED', message: expect.stringMatching(/not a URL index/) })
  expect(String(notIndex)).not.toContain('SECRET')

  const forged = await openSource(`${base}/pub/build.urls.json?sig=WRONG`)
  const denied = await readAll(forged, 'node-0/metadata.json').catch((e: Error) => e)
  forged.close?.()
  expect(denied).toMatchObject({ code: 'RO_FETCH_FAILED', message: expect.stringMatching(/\?\[redacted\]: HTTP 403/) })
})
