/** @module The oldest Node.js the node runs on. Several ingress threads share the HTTP port with
 * `server.listen({ reusePort })`, which Node 22.12 brought; an older Node ignores the option and
 * the second thread's listen fails with EADDRINUSE, so the node refuses to start there instead,
 * with a line that says why. */
import { ConfigError } from './config.js'

export const NODE_VERSION_MIN: readonly [number, number] = [22, 12]

/** Throws a ConfigError when `version` (`process.versions.node`) is older than NODE_VERSION_MIN. */
export function checkNodeVersion(version: string): void {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const [minMajor, minMinor] = NODE_VERSION_MIN
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return
  throw new ConfigError(
    `Node.js ${version} is too old: this node needs ${minMajor}.${minMinor} or later ` +
      '(npm start runs the pinned Node.js that npm install puts in node_modules/.bin)',
  )
}
