import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { loadS3Config } from '../../s3/aws-config'
import { S3Client } from '../../s3/s3-client'

/**
 * A real S3 server process on loopback (s3-server-main.ts: s3rver, Signature Version 4
 * checked, unsigned requests refused) with a fresh key pair, and the environment that
 * points rostore's S3 client at it: `env` for child processes (nodes, the CLI),
 * `apply()` for this process.
 */
export interface S3KeyPair {
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

/** One request as the server logged it (start with `logRequests`). */
export interface S3RequestLine {
  readonly method: string
  readonly path: string
  readonly range: string | null
  /** The access key id that signed it (header or presigned query). */
  readonly keyId: string | null
  readonly status: number
  /** Body bytes of the answer. */
  readonly bytes: number
}

function newKeyPair(): S3KeyPair {
  return {
    accessKeyId: `ROSTORETEST${randomBytes(4).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(20).toString('base64url'),
  }
}

export class S3TestServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
    readonly accessKeyId: string,
    readonly secretAccessKey: string,
    /** More key pairs of the same account (`extraKeyPairs`): one per process whose requests a test tells apart. */
    readonly extraKeys: readonly S3KeyPair[],
  ) {}

  static async start(
    opts: { buckets?: readonly string[]; port?: number; extraKeyPairs?: number; logRequests?: boolean } = {},
  ): Promise<S3TestServer> {
    const dir = await mkdtemp(join(tmpdir(), 'rostore-s3-'))
    const { accessKeyId, secretAccessKey } = newKeyPair()
    const extraKeys = Array.from({ length: opts.extraKeyPairs ?? 0 }, newKeyPair)
    const child = spawn(process.execPath, [join(__dirname, 's3-server-main.js')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env['PATH'],
        S3_DIR: dir,
        S3_ACCESS_KEY_ID: accessKeyId,
        S3_SECRET_ACCESS_KEY: secretAccessKey,
        S3_BUCKETS: (opts.buckets ?? []).join(','),
        S3_EXTRA_KEYS: extraKeys.map((k) => `${k.accessKeyId}:${k.secretAccessKey}`).join(','),
        ...(opts.logRequests === true ? { S3_LOG: `${dir}.requests.log` } : {}),
        ...(opts.port === undefined ? {} : { S3_PORT: String(opts.port) }),
      },
    })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! })
      lines.once('line', (l) => resolve((JSON.parse(l) as { port: number }).port))
      child.once('exit', (code) => reject(new Error(`the S3 server exited with ${code}: ${stderr}`)))
    })
    return new S3TestServer(child, dir, port, accessKeyId, secretAccessKey, extraKeys)
  }

  /** `env` with another key pair of the server's account. */
  envFor(key: S3KeyPair): Record<string, string> {
    return { ...this.env, AWS_ACCESS_KEY_ID: key.accessKeyId, AWS_SECRET_ACCESS_KEY: key.secretAccessKey }
  }

  /** Every finished request so far (the server was started with `logRequests`). */
  async requests(): Promise<S3RequestLine[]> {
    const text = await readFile(`${this.dir}.requests.log`, 'utf8').catch(() => '')
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as S3RequestLine)
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** The environment of a process that should use this server (no profile files read). */
  get env(): Record<string, string> {
    return {
      AWS_ACCESS_KEY_ID: this.accessKeyId,
      AWS_SECRET_ACCESS_KEY: this.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_S3: this.endpoint,
      AWS_CONFIG_FILE: '/nonexistent/aws-config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    }
  }

  /** Sets `env` in this process; returns a function that restores what was there. */
  apply(overrides: Record<string, string | undefined> = {}): () => void {
    const next: Record<string, string | undefined> = { ...this.env, ...overrides }
    const before: Record<string, string | undefined> = {}
    for (const k of [...Object.keys(next), 'AWS_PROFILE', 'AWS_ENDPOINT_URL', 'AWS_SESSION_TOKEN']) {
      before[k] = process.env[k]
      const v = next[k]
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
    return () => {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  }

  /** A client of this server (not the process's shared one). */
  client(): S3Client {
    return new S3Client(loadS3Config(this.env))
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r))
      this.child.kill('SIGTERM')
      await exited
    }
    await rm(this.dir, { recursive: true, force: true })
    await rm(`${this.dir}.requests.log`, { force: true })
  }
}
