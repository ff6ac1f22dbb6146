// The temporary directory of a test sshd: its keys, its sshd_config, the passwd, group and shadow
// bind-mounted over /etc inside its mount namespace, the homes, and the script that makes the mounts.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The unprivileged account's name, uid and gid (its own group). */
export const UNPRIVILEGED = { username: 'sandstream', uid: 60123 } as const;
/** The uid of the `sshd` privilege separation account in the generated passwd. */
const SSHD_UID = 60124;
const NOBODY = 65534;

/** The files {@link prepareDirectory} made. */
export interface PreparedDirectory {
  readonly hostKeyPath: string;
  readonly hostPublicKey: string;
  readonly fingerprint: string;
  readonly clientKeyPath: string;
  readonly clientKey: string;
  readonly rootHome: string;
  readonly unprivilegedHome: string;
  /** The shell script run in the new mount namespace: mounts, then `exec "$@"` (sshd). */
  readonly setupScript: string;
}

/** A fresh ed25519 key pair at `path` (no passphrase, no comment); returns the public key's type and base64. */
function generateKey(path: string): string {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', path], { stdio: ['ignore', 'ignore', 'pipe'] });
  return readFileSync(`${path}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
}

/** `mkdir` with exactly `mode`, whatever the umask. */
function directory(path: string, mode: number): void {
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
}

/** `writeFile` with exactly `mode`, whatever the umask. */
function file(path: string, text: string, mode: number): void {
  writeFileSync(path, text);
  chmodSync(path, mode);
}

/** The lines of a real /etc file other than those the test server defines itself. */
function realLines(path: string, names: readonly string[], ids: readonly number[]): string[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter((line) => {
    const [name, , id] = line.split(':');
    return line.trim() !== '' && !line.startsWith('#') && !names.includes(name ?? '') && !ids.includes(Number(id));
  });
}

/**
 * The passwd, group and shadow of the namespace: the machine's accounts (so names of files' owners still
 * resolve), but `root` with its home in `dir` and shell /bin/sh, the unprivileged account and its group,
 * `sshd` (privilege separation, home /run/sshd) and `nobody`. The shadow has no password hash at all: `*`
 * for everyone (not `!`, which sshd without PAM takes for a locked account and refuses even a key).
 */
function writeAccounts(dir: string, rootHome: string, unprivilegedHome: string): void {
  const { username, uid } = UNPRIVILEGED;
  const ours = ['root', 'sshd', 'nobody', 'nogroup', username];
  const passwd = [
    `root:x:0:0:root:${rootHome}:/bin/sh`,
    ...realLines('/etc/passwd', ours, [0, uid, SSHD_UID, NOBODY]),
    `sshd:x:${SSHD_UID}:${NOBODY}::/run/sshd:/usr/sbin/nologin`,
    `nobody:x:${NOBODY}:${NOBODY}:nobody:/nonexistent:/usr/sbin/nologin`,
    `${username}:x:${uid}:${uid}:${username}:${unprivilegedHome}:/bin/sh`,
  ];
  const group = ['root:x:0:', ...realLines('/etc/group', ours, [0, uid, NOBODY]), `nogroup:x:${NOBODY}:`, `${username}:x:${uid}:`];
  const shadow = passwd.map((line) => `${line.split(':')[0]}:*:19000:0:99999:7:::`);
  directory(join(dir, 'etc'), 0o755);
  file(join(dir, 'etc', 'passwd'), `${passwd.join('\n')}\n`, 0o644);
  file(join(dir, 'etc', 'group'), `${group.join('\n')}\n`, 0o644);
  file(join(dir, 'etc', 'shadow'), `${shadow.join('\n')}\n`, 0o640);
  // Over /etc/ssh/sshrc, should the machine have one: sshd would run it before every command.
  file(join(dir, 'etc', 'sshrc'), '', 0o644);
}

/** The sshd_config of a server on 127.0.0.1:`port`. */
export function sshdConfig(dir: string, hostKeyPath: string, port: number, version: readonly [number, number]): string {
  const [major, minor] = version;
  return [
    `ListenAddress 127.0.0.1:${port}`,
    'AddressFamily inet',
    `HostKey ${hostKeyPath}`,
    'PidFile none',
    'UsePAM no',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'HostbasedAuthentication no',
    `AuthorizedKeysFile ${join(dir, 'authorized_keys', '%u')}`,
    'AuthorizedPrincipalsFile none',
    'StrictModes no',
    'PermitRootLogin prohibit-password',
    'PermitUserEnvironment no',
    // OpenSSH's defaults for what a client meets on any server: ~/.ssh/rc runs before each command
    // (and may print), and a connection carries at most 10 sessions. Many connections may start at once.
    'PermitUserRC yes',
    'MaxStartups 100',
    'LoginGraceTime 30',
    'UseDNS no',
    'PrintMotd no',
    'PrintLastLog no',
    'X11Forwarding no',
    'Subsystem sftp internal-sftp',
    'LogLevel INFO',
    // From 9.8 on, sshd refuses for a while a source whose sessions crashed or were cut, as tests do.
    ...(major > 9 || (major === 9 && minor >= 8) ? ['PerSourcePenalties no'] : []),
    '',
  ].join('\n');
}

/** The mounts of the namespace (sh: `$1` the directory, then the command to exec). */
const SETUP_SCRIPT = `set -e
d=$1; shift
mount -t tmpfs -o mode=0755,size=16m sandstream-sshd "$d/ns"
if [ ! -d /run/sshd ]; then
  # The privilege separation directory, in /run as seen here only: an overlay keeps what /run holds.
  mkdir "$d/ns/upper" "$d/ns/work"
  mount -t overlay sandstream-run -o "lowerdir=/run,upperdir=$d/ns/upper,workdir=$d/ns/work" /run || mount -t tmpfs -o mode=0755,size=16m sandstream-run /run
  mkdir -m 0755 /run/sshd
fi
for f in passwd group shadow; do if [ -e "/etc/$f" ]; then mount --bind "$d/etc/$f" "/etc/$f"; fi; done
if [ -e /etc/ssh/sshrc ]; then mount --bind "$d/etc/sshrc" /etc/ssh/sshrc; fi
# Logins are recorded here, not in the machine's records.
for f in wtmp btmp lastlog; do if [ -f "/var/log/$f" ]; then mount --bind "$d/log/$f" "/var/log/$f"; fi; done
exec "$@"
`;

/**
 * Fills `dir` (mode 0755, so every account reaches its home and authorized keys): host and client keys,
 * authorized_keys/<user> for both accounts, the generated /etc files, empty login records, the homes
 * (owned by their accounts, empty: no shell startup file of the machine's root is ever read).
 */
export function prepareDirectory(dir: string): PreparedDirectory {
  chmodSync(dir, 0o755);
  const hostKeyPath = join(dir, 'ssh_host_ed25519_key');
  const clientKeyPath = join(dir, 'client_ed25519_key');
  const hostPublicKey = generateKey(hostKeyPath);
  const clientPublicKey = generateKey(clientKeyPath);
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${hostKeyPath}.pub`], { encoding: 'utf8' }).split(/\s+/)[1] ?? '';
  directory(join(dir, 'authorized_keys'), 0o755);
  for (const user of ['root', UNPRIVILEGED.username]) file(join(dir, 'authorized_keys', user), `${clientPublicKey}\n`, 0o644);
  directory(join(dir, 'home'), 0o755);
  const rootHome = join(dir, 'home', 'root');
  const unprivilegedHome = join(dir, 'home', UNPRIVILEGED.username);
  directory(rootHome, 0o700);
  directory(unprivilegedHome, 0o755);
  chownSync(unprivilegedHome, UNPRIVILEGED.uid, UNPRIVILEGED.uid);
  writeAccounts(dir, rootHome, unprivilegedHome);
  directory(join(dir, 'log'), 0o755);
  for (const record of ['wtmp', 'btmp', 'lastlog']) file(join(dir, 'log', record), '', 0o644);
  directory(join(dir, 'ns'), 0o755);
  const setupScript = join(dir, 'namespace.sh');
  file(setupScript, SETUP_SCRIPT, 0o755);
  return {
    hostKeyPath,
    hostPublicKey,
    fingerprint,
    clientKeyPath,
    clientKey: readFileSync(clientKeyPath, 'utf8'),
    rootHome,
    unprivilegedHome,
    setupScript,
  };
}
