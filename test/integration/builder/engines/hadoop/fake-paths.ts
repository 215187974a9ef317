import { join } from 'node:path'

/** The local file behind a fake HDFS path: hdfs://<any>/p and /p are <root>/p; relative paths are under /user/tester. */
export function fakeHdfsLocal(root: string, p: string): string {
  const m = /^hdfs:\/\/[^/]*(\/.*)?$/.exec(p)
  const path = m ? (m[1] ?? '/') : p.startsWith('/') ? p : `/user/tester/${p}`
  return join(root, path)
}
