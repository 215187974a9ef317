import { hasCredentials, isRedacted, redactCredentials } from '../../../common/redact'

describe('redactCredentials', () => {
  test.each([
    ['http://user:pw@host/builds/v1', 'http://[redacted]@host/builds/v1'],
    ['https://token@host:8443/b/', 'https://[redacted]@host:8443/b/'],
    ['https://HOST.example.com/b?sig=abc&se=1', 'https://HOST.example.com/b?[redacted]'],
    ['https://u:p@h/b/?X-Amz-Signature=abc#frag', 'https://[redacted]@h/b/?[redacted]'],
    ['http://h/a@b/c', 'http://h/a@b/c'], // an '@' in the path is no user info
    ['http://u:p%40x@h/a', 'http://[redacted]@h/a'],
    ['http://h/b?', 'http://h/b'],
    ['s3://bucket/builds/v1/', 's3://bucket/builds/v1/'],
    ['/data/builds/v1', '/data/builds/v1'],
    ['http://h/b', 'http://h/b'],
  ])('%s -> %s', (input, output) => {
    expect(redactCredentials(input)).toBe(output)
    expect(redactCredentials(output)).toBe(output)
  })

  test('every URL inside a message or a JSON log line', () => {
    const line = JSON.stringify({
      event: 'push-record',
      source: 'http://alice:hunter2@h/v1',
      error: 'fetch from https://h/v1?sig=S3CRET failed',
    })
    const out = redactCredentials(line)
    expect(out).not.toMatch(/hunter2|alice|S3CRET/)
    expect(JSON.parse(out)).toEqual({
      event: 'push-record',
      source: 'http://[redacted]@h/v1',
      error: 'fetch from https://h/v1?[redacted] failed',
    })
  })

  test('a URL that does not parse is hidden conservatively', () => {
    const out = redactCredentials('bad source URL http://u:pw@[bad/x?sig=1')
    expect(out).not.toContain('pw')
    expect(out).not.toContain('sig=1')
  })

  test('hasCredentials and isRedacted', () => {
    expect(hasCredentials('http://u:p@h/x')).toBe(true)
    expect(hasCredentials('https://h/x?sig=1')).toBe(true)
    expect(hasCredentials('https://h/x')).toBe(false)
    expect(hasCredentials('/a/b')).toBe(false)
    expect(isRedacted(redactCredentials('https://h/x?sig=1'))).toBe(true)
    expect(isRedacted('https://h/x')).toBe(false)
  })
})
