import { createHash } from 'node:crypto'
import { loadS3Config } from './aws-config'
import { S3Client } from './s3-client'

let shared: { readonly key: string; readonly client: S3Client } | undefined

/**
 * The process's S3 client for the configuration in the environment now: one connection
 * pool for every input, output and listing of a build or a push. Re-read on every call (a
 * cheap look at the environment and two small files), so a changed environment gets a
 * new client and the old one's connections are closed.
 */
export function sharedS3Client(env: NodeJS.ProcessEnv = process.env): S3Client {
  const config = loadS3Config(env)
  const key = createHash('sha256')
    .update(JSON.stringify([config.credentials, config.region, config.endpoint.href, config.pathStyle]))
    .digest('hex')
  if (shared?.key !== key) {
    shared?.client.close()
    shared = { key, client: new S3Client(config) }
  }
  return shared.client
}
