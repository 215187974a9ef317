import type { IncomingMessage } from 'node:http'
import { AdminAuth, AdminDisabledError, checkToken, MAX_TOKEN_LENGTH } from '../../../server/auth'
import { isJobId, Jobs } from '../../../server/jobs/jobs'
import { StoreError } from '../../../common/errors'

const req = (authorization?: string): IncomingMessage =>
  ({ headers: authorization === undefined ? {} : { authorization } }) as IncomingMessage

describe('AdminAuth', () => {
  test('accepts exactly the token', () => {
    const a = new AdminAuth('s3cret-token-value')
    expect(a.enabled).toBe(true)
    expect(() => a.check(req('Bearer s3cret-token-value'))).not.toThrow()
    expect(() => a.check(req('bearer s3cret-token-value'))).not.toThrow()
    for (const bad of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      'Bearer s3cret-token-valuE',
      'Bearer s3cret-token-value2',
      'Basic s3cret-token-value',
      's3cret-token-value',
      'Bearer s3cret token-value',
    ]) {
      expect(() => a.check(req(bad))).toThrow(expect.objectContaining({ code: 'RO_UNAUTHORIZED' }))
    }
  })

  test('without a token admin is disabled, not open', () => {
    for (const t of [undefined, '']) {
      const a = new AdminAuth(t)
      expect(a.enabled).toBe(false)
      expect(() => a.check(req('Bearer '))).toThrow(AdminDisabledError)
      expect(() => a.check(req())).toThrow(AdminDisabledError)
    }
  })
})

describe('checkToken: the rule for every configured token', () => {
  test('visible ASCII is accepted, punctuation included', () => {
    for (const t of ['s3cret-token-value', 'a', 'A+/=~._-!#$%&*', 'x'.repeat(MAX_TOKEN_LENGTH)]) expect(checkToken('t', t)).toBe(t)
  })

  test('whitespace, control and non-ASCII characters are refused, naming the position but never the token', () => {
    for (const [t, kind, at] of [
      ['secret token', 'whitespace', 7],
      [' leading-space-token', 'whitespace', 1],
      ['trailing-space-token ', 'whitespace', 21],
      ['tab\ttoken', 'whitespace', 4],
      ['line\nbreak', 'whitespace', 5],
      ['nul\u0000byte', 'a control character', 4],
      ['del\u007fchar', 'a control character', 4],
      ['caf\u00e9-token', 'a non-ASCII character', 4],
    ] as const) {
      let err: unknown
      try {
        checkToken('the admin token', t)
      } catch (e) {
        err = e
      }
      expect(err).toMatchObject({ code: 'RO_BAD_OPTION', message: expect.stringContaining(`${kind} at character ${at}`) })
      expect((err as Error).message).not.toContain(t.trim())
    }
    expect(() => checkToken('t', 'x'.repeat(MAX_TOKEN_LENGTH + 1))).toThrow(expect.objectContaining({ code: 'RO_BAD_OPTION' }))
  })

  test('AdminAuth refuses such a token when it is configured, instead of never matching it', () => {
    expect(() => new AdminAuth('two words-0123456789')).toThrow(expect.objectContaining({ code: 'RO_BAD_OPTION' }))
  })
})

describe('Jobs', () => {
  test('success, failure, cancel, lookup', async () => {
    const finished: string[] = []
    const jobs = new Jobs({ onFinish: (j) => finished.push(`${j.kind}:${j.state}`) })
    const ok = jobs.start('install', 's', async ({ progress }) => {
      progress({ n: 1 })
      return { version: 3 }
    })
    expect(isJobId(ok.id)).toBe(true)
    expect(ok.state).toBe('running')
    expect(await jobs.wait(ok.id)).toMatchObject({ state: 'succeeded', result: { version: 3 }, progress: { n: 1 } })

    const bad = jobs.start('install', 's', async () => {
      throw new StoreError('RO_CHECKSUM_MISMATCH', 'nope')
    })
    expect(await jobs.wait(bad.id)).toMatchObject({ state: 'failed', error: { code: 'RO_CHECKSUM_MISMATCH', message: 'nope' } })

    const slow = jobs.start(
      'fetch',
      's',
      ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new StoreError('RO_ABORTED', 'x')))),
    )
    expect(jobs.running().map((j) => j.id)).toEqual([slow.id])
    jobs.cancel(slow.id)
    expect(await jobs.wait(slow.id)).toMatchObject({ state: 'cancelled' })
    expect(() => jobs.cancel(slow.id)).toThrow(expect.objectContaining({ code: 'RO_CONFLICT' }))
    expect(() => jobs.cancel('00000000-0000-0000-0000-000000000000')).toThrow(expect.objectContaining({ code: 'RO_NOT_FOUND' }))
    expect(finished).toEqual(['install:succeeded', 'install:failed', 'fetch:cancelled'])
    expect(isJobId('../x')).toBe(false)
  })

  test('waitUpTo: a long poll answered when the job ends, or with the job still running once its time is up', async () => {
    const jobs = new Jobs()
    let end: () => void = () => undefined
    const job = jobs.start('fetch', 's', () => new Promise<void>((r) => (end = r)))
    // Still running after a short wait.
    expect(await jobs.waitUpTo(job.id, 20)).toMatchObject({ state: 'running' })
    // A minute's wait answers as soon as the job ends (jest's 5 s timeout would fail it otherwise).
    const polled = jobs.waitUpTo(job.id, 60_000)
    await new Promise((r) => setImmediate(r))
    end()
    expect(await polled).toMatchObject({ state: 'succeeded' })
    // An ended job, and a zero wait, answer at once.
    expect(await jobs.waitUpTo(job.id, 60_000)).toMatchObject({ state: 'succeeded' })
    await expect(jobs.waitUpTo('00000000-0000-0000-0000-000000000000', 10)).rejects.toMatchObject({ code: 'RO_NOT_FOUND' })
  })

  test('bounded running jobs and remembered finished jobs', async () => {
    const jobs = new Jobs({ maxRunning: 2, maxFinished: 3 })
    const gates: (() => void)[] = []
    const hold = (): Promise<void> => new Promise((r) => gates.push(r))
    jobs.start('a', 's', hold)
    jobs.start('a', 's', hold)
    expect(() => jobs.start('a', 's', hold)).toThrow(expect.objectContaining({ code: 'RO_CONFLICT' }))
    await new Promise((r) => setImmediate(r))
    gates.forEach((g) => g())
    await jobs.cancelAll()
    for (let i = 0; i < 5; i++) await jobs.wait(jobs.start('b', 's', async () => i).id)
    expect(jobs.list().length).toBe(3)
  })
})
