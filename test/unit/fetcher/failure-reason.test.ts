import { StoreError } from '../../../common/errors'
import { failureReason, FetchFailure } from '../../../fetcher/transfer/failure-reason'
import { StallError } from '../../../fetcher/transfer/stall-guard'

describe('failureReason', () => {
  test("rostore's own errors keep their message", () => {
    expect(failureReason(new StoreError('RO_FETCH_FAILED', 'http://b/x/node-0/0.data: HTTP 404'))).toBe(
      'http://b/x/node-0/0.data: HTTP 404',
    )
    expect(failureReason(new StallError('x: no data for 100 ms'))).toBe('x: no data for 100 ms')
    expect(failureReason(new FetchFailure('x: HTTP 503'))).toBe('x: HTTP 503')
  })

  test('network and file-system errors become a kind of failure, naming no address, path or content', () => {
    const errno = (code: string, message: string): Error => Object.assign(new Error(message), { code })
    const cases: [Error, string][] = [
      [errno('ECONNREFUSED', 'connect ECONNREFUSED 10.1.2.3:8080'), 'connection refused'],
      [errno('ENOTFOUND', 'getaddrinfo ENOTFOUND internal.corp'), 'host name not found'],
      [errno('ECONNRESET', 'read ECONNRESET'), 'connection reset'],
      [errno('EIO', "EIO: i/o error, read '/mnt/secret/x'"), 'file system I/O error'],
      [errno('HPE_INVALID_HEADER_TOKEN', 'Parse Error: Invalid header value char "root:x:0:0"'), 'malformed HTTP response'],
      [errno('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'), 'TLS handshake failed (DEPTH_ZERO_SELF_SIGNED_CERT)'],
      [errno('EWHATEVER', 'something /etc/shadow'), 'error EWHATEVER'],
      [new SyntaxError('Unexpected token \'r\', "root:x:0:0"... is not valid JSON'), 'unexpected error (see the node log)'],
    ]
    for (const [err, want] of cases) expect(failureReason(err)).toBe(want)
  })
})
