/**
 * Credentials, region and endpoint the way every AWS-compatible tool takes them:
 *
 * 1. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
 *    AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL);
 * 2. the profile AWS_PROFILE (default "default") of the shared files: credentials from
 *    AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials), then from AWS_CONFIG_FILE
 *    (default ~/.aws/config, sections `[profile NAME]`, or `[default]`), with `region` and
 *    `endpoint_url` from the config file.
 *
 * A value in the environment beats the files, key by key, as in the AWS CLI. Instance
 * roles, SSO and web identity are not read: give such nodes keys through the environment
 * (docs/DISTRIBUTED.md).
 */
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { StoreError } from '../common/errors'
import { parseIni } from './ini'

export interface S3Credentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string
}

export interface S3Config {
  readonly credentials: S3Credentials
  readonly region: string
  /** The endpoint's origin (scheme, host, port); AWS's regional endpoint when none is set. */
  readonly endpoint: URL
  /**
   * Path-style requests (`<endpoint>/<bucket>/<key>`): for every custom endpoint (MinIO,
   * Ceph, a test server), whose buckets have no DNS names; AWS itself gets virtual-hosted
   * requests (`<bucket>.s3.<region>.amazonaws.com`).
   */
  readonly pathStyle: boolean
  /** Where each value came from, for messages: never the values themselves. */
  readonly origin: string
}

type Env = Readonly<Record<string, string | undefined>>

/** Reads the configuration; RO_BAD_OPTION when no credentials are found or a value is bad. */
export function loadS3Config(env: Env = process.env): S3Config {
  const profileName = nonEmpty(env['AWS_PROFILE']) ?? 'default'
  const home = nonEmpty(env['HOME']) ?? homedir()
  const credentialsFile = nonEmpty(env['AWS_SHARED_CREDENTIALS_FILE']) ?? join(home, '.aws', 'credentials')
  const configFile = nonEmpty(env['AWS_CONFIG_FILE']) ?? join(home, '.aws', 'config')
  const fromCredentials = readSection(credentialsFile, profileName)
  const fromConfig = readSection(configFile, profileName === 'default' ? 'default' : `profile ${profileName}`)
  const profile = (k: string): string | undefined => nonEmpty(fromCredentials?.[k]) ?? nonEmpty(fromConfig?.[k])

  let credentials: S3Credentials
  let origin: string
  const envKey = nonEmpty(env['AWS_ACCESS_KEY_ID'])
  const envSecret = nonEmpty(env['AWS_SECRET_ACCESS_KEY'])
  if (envKey !== undefined && envSecret !== undefined) {
    const token = nonEmpty(env['AWS_SESSION_TOKEN'])
    credentials = { accessKeyId: envKey, secretAccessKey: envSecret, ...(token === undefined ? {} : { sessionToken: token }) }
    origin = 'the environment (AWS_ACCESS_KEY_ID)'
  } else {
    const key = profile('aws_access_key_id')
    const secret = profile('aws_secret_access_key')
    if (key === undefined || secret === undefined) {
      throw new StoreError(
        'RO_BAD_OPTION',
        `no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile "${profileName}" keys in ` +
          `${credentialsFile} (AWS_PROFILE picks another profile)`,
      )
    }
    const token = profile('aws_session_token')
    credentials = { accessKeyId: key, secretAccessKey: secret, ...(token === undefined ? {} : { sessionToken: token }) }
    origin = `profile "${profileName}" of the shared AWS files`
  }

  const region = nonEmpty(env['AWS_REGION']) ?? nonEmpty(env['AWS_DEFAULT_REGION']) ?? nonEmpty(fromConfig?.['region']) ?? 'us-east-1'
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new StoreError('RO_BAD_OPTION', `bad AWS region ${JSON.stringify(region)}`)
  const endpointText = nonEmpty(env['AWS_ENDPOINT_URL_S3']) ?? nonEmpty(env['AWS_ENDPOINT_URL']) ?? nonEmpty(fromConfig?.['endpoint_url'])
  let endpoint: URL
  let pathStyle: boolean
  if (endpointText === undefined) {
    endpoint = new URL(`https://s3.${region}.amazonaws.com`)
    pathStyle = false
  } else {
    try {
      endpoint = new URL(endpointText)
    } catch {
      throw new StoreError('RO_BAD_OPTION', 'the S3 endpoint (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or endpoint_url) is not a URL')
    }
    if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:')
      throw new StoreError('RO_BAD_OPTION', 'the S3 endpoint must be an http:// or https:// URL')
    if (endpoint.username !== '' || endpoint.password !== '' || endpoint.search !== '')
      throw new StoreError('RO_BAD_OPTION', 'the S3 endpoint must not carry credentials or a query')
    pathStyle = true
  }
  return { credentials, region, endpoint: new URL(endpoint.origin), pathStyle, origin }
}

function nonEmpty(v: string | undefined): string | undefined {
  const t = v?.trim()
  return t === undefined || t === '' ? undefined : t
}

/** One section of a shared AWS file, or undefined when the file or section is absent. */
function readSection(file: string, section: string): Readonly<Record<string, string>> | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  return parseIni(text).get(section)
}
