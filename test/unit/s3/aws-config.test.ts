import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadS3Config } from '../../../s3/aws-config'
import { parseS3Url } from '../../../s3/s3-url'
import { decodeEntities, element, elements } from '../../../s3/xml'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(() => tmp.cleanup())

function files(credentials: string, config: string): { AWS_SHARED_CREDENTIALS_FILE: string; AWS_CONFIG_FILE: string } {
  const dir = tmp.fresh()
  writeFileSync(join(dir, 'credentials'), credentials)
  writeFileSync(join(dir, 'config'), config)
  return { AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_CONFIG_FILE: join(dir, 'config') }
}

describe('loadS3Config', () => {
  test('the environment first: keys, session token, region, endpoint (path-style)', () => {
    const c = loadS3Config({
      AWS_ACCESS_KEY_ID: 'AKIA1',
      AWS_SECRET_ACCESS_KEY: 's1',
      AWS_SESSION_TOKEN: 't1',
      AWS_REGION: 'eu-west-3',
      AWS_ENDPOINT_URL: 'http://other:1',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000/',
      ...files('', ''),
    })
    expect(c.credentials).toEqual({ accessKeyId: 'AKIA1', secretAccessKey: 's1', sessionToken: 't1' })
    expect(c.region).toBe('eu-west-3')
    expect(c.endpoint.href).toBe('http://127.0.0.1:9000/')
    expect(c.pathStyle).toBe(true)
    expect(c.origin).not.toContain('s1')
  })

  test('a profile of the shared files: credentials file, then config file; region and endpoint_url from config', () => {
    const f = files(
      '[default]\naws_access_key_id = D\naws_secret_access_key = d\n\n[prod]\naws_access_key_id=P\naws_secret_access_key=p # not a comment\n',
      '[default]\nregion = us-west-2\n[profile prod]\nregion = ap-south-1\nendpoint_url = https://minio.example:9000\ns3 =\n  addressing_style = virtual\n[profile cfgonly]\naws_access_key_id = C\naws_secret_access_key = c\n',
    )
    const d = loadS3Config(f)
    expect(d.credentials.accessKeyId).toBe('D')
    expect(d.region).toBe('us-west-2')
    expect(d.endpoint.href).toBe('https://s3.us-west-2.amazonaws.com/')
    expect(d.pathStyle).toBe(false)
    const p = loadS3Config({ ...f, AWS_PROFILE: 'prod' })
    expect(p.credentials.accessKeyId).toBe('P')
    expect(p.region).toBe('ap-south-1')
    expect(p.endpoint.href).toBe('https://minio.example:9000/')
    expect(p.pathStyle).toBe(true)
    expect(loadS3Config({ ...f, AWS_PROFILE: 'cfgonly' }).credentials.accessKeyId).toBe('C')
    // The environment's region beats the profile's.
    expect(loadS3Config({ ...f, AWS_PROFILE: 'prod', AWS_DEFAULT_REGION: 'eu-north-1' }).region).toBe('eu-north-1')
  })

  test('no credentials, a bad endpoint or region: RO_BAD_OPTION saying what to set', () => {
    const none = files('', '')
    expect(() => loadS3Config(none)).toThrow(
      expect.objectContaining({ code: 'RO_BAD_OPTION', message: expect.stringMatching(/AWS_ACCESS_KEY_ID/) }),
    )
    const keys = { ...none, AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's' }
    expect(() => loadS3Config({ ...keys, AWS_ENDPOINT_URL_S3: 'ftp://x' })).toThrow(expect.objectContaining({ code: 'RO_BAD_OPTION' }))
    expect(() => loadS3Config({ ...keys, AWS_ENDPOINT_URL_S3: 'http://u:p@x' })).toThrow(expect.objectContaining({ code: 'RO_BAD_OPTION' }))
    expect(() => loadS3Config({ ...keys, AWS_REGION: '../x' })).toThrow(expect.objectContaining({ code: 'RO_BAD_OPTION' }))
  })
})

describe('s3:// URLs and S3 XML', () => {
  test('parseS3Url', () => {
    expect(parseS3Url('s3://b-1/a/b/')).toEqual({ bucket: 'b-1', key: 'a/b/' })
    expect(parseS3Url('S3://bucket')).toEqual({ bucket: 'bucket', key: '' })
    for (const bad of ['s3://', 's3://b/x/../y', 's3://a:b@bucket/x', 's3://b/x?y=1', 'http://b/x', 's3://b//x'])
      expect(() => parseS3Url(bad)).toThrow(RangeError)
  })

  test('elements and entities', () => {
    const xml =
      '<R><Contents><Key>a&amp;b&#x2F;c</Key><Size>3</Size></Contents><Contents><Key>d</Key></Contents><IsTruncated>false</IsTruncated></R>'
    expect(elements(xml, 'Contents')).toHaveLength(2)
    expect(element(elements(xml, 'Contents')[0]!, 'Key')).toBe('a&b/c')
    expect(element(xml, 'IsTruncated')).toBe('false')
    expect(element(xml, 'Nope')).toBeUndefined()
    expect(decodeEntities('&lt;&#60;&bogus;&#99999999;')).toBe('<<&bogus;&#99999999;')
  })
})
