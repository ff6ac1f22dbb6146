/**
 * The plain mode's guard against the death of this process: a command
 * never outlives the code that started it, even when that code is killed
 * (SIGKILL, the OOM killer) or exits without disposing of its commands.
 *
 * Each plain command leads a process group of its own and nothing else
 * signals it, so a small `sh` started once per process (per thread), in a
 * session of its own, holds the list of those groups. It reads them from a
 * pipe whose only writer is this process, and the kernel closes that pipe
 * when this process ends, however it ends: at end-of-file the guardian
 * runs the termination sequence (spec 9.8) on every group still listed,
 * then exits. While this process lives, the guardian only blocks in `read`
 * (a builtin): no fork, no timer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isLiveProcess, readProcStat } from '@sandstream/types/runtime';
import { closeOrphanedPipes, spawnMark } from './exhaustion.js';
import { findUtility } from './utilities.js';

/**
 * The guardian's program, for POSIX `sh` (dash, bash, busybox ash). Its
 * standard input carries one request a line:
 *
 * - `+PGID START GRACE_MS`: a command's process group, the start time of
 *   its leader (field 22 of `/proc/PGID/stat`) and its grace period;
 * - `-PGID`: that group is gone.
 *
 * (`\${` is the template literal's escape of the shell's `${`.)
 */
export const GUARDIAN_SCRIPT = `# The groups to end, each entry " PGID:START:GRACE_MS" after a space, so
# that " $pgid:" matches the start of that group's entry only.
registered=''

# Removes group $1's entry, if there is one.
forget() {
  case $registered in
    *" $1:"*)
      entries_before=\${registered%%" $1:"*}
      entries_after=\${registered#*" $1:"}
      # What is left of the entry (START:GRACE_MS) runs to the next space.
      case $entries_after in
        *' '*) entries_after=" \${entries_after#* }" ;;
        *) entries_after='' ;;
      esac
      registered=$entries_before$entries_after
      ;;
  esac
}

# Sets stat_fields to the fields of /proc/$1/stat from the third (the
# state) on; fails once the process is gone. The command name before them
# is in parentheses and may itself hold spaces and parentheses: the fields
# start after the last ") ".
read_stat() {
  read -r stat_line 2>/dev/null <"/proc/$1/stat" || return 1
  stat_fields=\${stat_line##*") "}
}

# Sets field to field $1 of the stat line read last, numbered as in
# proc(5): 3 is the state, 5 the process group, 22 the start time.
field() {
  field_rest=$stat_fields
  field_number=3
  while [ "$field_number" -lt "$1" ]; do
    field_rest=\${field_rest#* }
    field_number=$((field_number + 1))
  done
  field=\${field_rest%% *}
}

# Whether group $1, registered with its leader's start time $2, may be
# signalled. While a member of a group lives, the kernel gives its number
# to no new process: with the leader gone, a signal reaches what is left
# of the command or nothing. A process holding the number with another
# start time got it again, once the group was gone: not ours.
is_ours() {
  read_stat "$1" || return 0
  field 22
  [ "$field" = "$2" ]
}

# Sets live_groups to the groups that have a member neither zombie nor
# dead, each " PGID " between spaces: one look at every process, however
# many groups are being ended. An orphan whose new parent does not reap it
# (a container's init often does not) stays a zombie for good.
find_live_groups() {
  live_groups=' '
  for proc_dir in /proc/[0-9]*; do
    read_stat "\${proc_dir#/proc/}" || continue
    field 3
    case $field in
      Z | X) continue ;;
    esac
    field 5
    case $live_groups in
      *" $field "*) ;;
      *) live_groups="$live_groups$field " ;;
    esac
  done
}

# Sets now_ms to the time since boot in milliseconds: /proc/uptime holds
# seconds with two decimals, and a builtin read forks nothing.
clock() {
  read -r uptime _ </proc/uptime
  uptime_hundredths=\${uptime#*.}
  now_ms=$((\${uptime%.*} * 1000 + \${uptime_hundredths#0} * 10))
}

# Waits a little, between two looks at the groups being ended. Only after
# end-of-file: this is the guardian's one fork. A sleep that takes no
# fraction (not coreutils', nor busybox's) waits a second.
tick=0.05
pause() {
  sleep "$tick" 2>/dev/null || {
    tick=1
    sleep "$tick"
  }
}

while read -r request start grace_ms; do
  pgid=\${request#[+-]}
  # Anything but a group number past 1 is no request of the host's: -0
  # and -1 would signal this guardian's own group, or every process.
  case $pgid in
    '' | *[!0-9]*) continue ;;
  esac
  [ "$pgid" -gt 1 ] || continue
  forget "$pgid"
  case $request in
    +*)
      case $start$grace_ms in
        '' | *[!0-9]*) continue ;;
      esac
      registered="$registered $pgid:$start:$grace_ms"
      ;;
  esac
done

# End-of-file: the host is gone. Every group still registered and still
# its command's gets SIGTERM, then SIGCONT (a stopped group acts on the
# SIGTERM only once continued), and a deadline at the end of its grace
# period. Entries are digits and colons: splitting them on spaces is safe.
clock
ending=''
for entry in $registered; do
  pgid=\${entry%%:*}
  entry_rest=\${entry#*:}
  start=\${entry_rest%%:*}
  grace_ms=\${entry_rest#*:}
  is_ours "$pgid" "$start" || continue
  kill -TERM "-$pgid" 2>/dev/null
  kill -CONT "-$pgid" 2>/dev/null
  ending="$ending $pgid:$start:$((now_ms + grace_ms))"
done

# A group with no process left is done; one whose grace period is over
# gets SIGKILL (and is not waited for). The groups are watched together,
# so that the last is gone within the longest grace period, plus a tick.
# kill -0 counts zombies as members: a group left with zombies only is
# then found by a look at every process, taken only when it cannot make a
# SIGKILL late (a look takes as long as the last one did: 0.4 ms a process
# under dash, whose read goes byte by byte).
look_ms=0
while [ -n "$ending" ]; do
  pause
  clock
  still_ending=''
  earliest_deadline_ms=''
  for entry in $ending; do
    pgid=\${entry%%:*}
    entry_rest=\${entry#*:}
    start=\${entry_rest%%:*}
    deadline_ms=\${entry_rest#*:}
    kill -0 "-$pgid" 2>/dev/null || continue
    if [ "$now_ms" -ge "$deadline_ms" ]; then
      is_ours "$pgid" "$start" && kill -KILL "-$pgid" 2>/dev/null
      continue
    fi
    still_ending="$still_ending $entry"
    if [ -z "$earliest_deadline_ms" ] || [ "$deadline_ms" -lt "$earliest_deadline_ms" ]; then
      earliest_deadline_ms=$deadline_ms
    fi
  done
  ending=$still_ending
  # Members left, perhaps zombies only: a look tells, if there is time for one.
  if [ -z "$ending" ] || [ $((now_ms + look_ms)) -ge "$earliest_deadline_ms" ]; then
    continue
  fi
  look_started_ms=$now_ms
  find_live_groups
  clock
  look_ms=$((now_ms - look_started_ms))
  still_ending=''
  for entry in $ending; do
    case $live_groups in
      *" \${entry%%:*} "*) still_ending="$still_ending $entry" ;;
    esac
  done
  ending=$still_ending
done
exit 0
`;

/**
 * The guardian's arguments after the shell's path: the program comes in
 * the environment, so that `ps` shows one short line, not the script, and
 * `$0` names it.
 */
export const GUARDIAN_ARGS: readonly string[] = ['-c', 'eval "$SANDSTREAM_GUARDIAN"', 'sandstream-guardian'];

/**
 * The guardian's whole environment. PATH: builtins, or the system's own
 * programs, never the caller's. SHLVL: bash, whose standard input is a
 * socket here (Node.js makes its pipes with socketpair), takes itself for a
 * shell run by rshd and reads ~/.bashrc unless it is nested.
 */
export const GUARDIAN_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/bin:/bin:/usr/sbin:/sbin',
  LC_ALL: 'C',
  SHLVL: '1',
  SANDSTREAM_GUARDIAN: GUARDIAN_SCRIPT,
};

/** What the guardian knows of a group. */
interface Registration {
  /** Its leader's start time, in clock ticks since boot. */
  readonly startTicks: number;
  readonly graceMs: number;
}

/**
 * This process's side of the guardian: the groups it registered, and the
 * `sh` that ends them should this process die first. Started at the first
 * registration; one that died (killed by someone) is replaced at the next
 * registration or removal, and is told every group still registered.
 */
export class Guardian {
  private child: ChildProcess | undefined;
  private readonly groups = new Map<number, Registration>();

  constructor(private readonly shell: string) {}

  /** The guardian's pid while one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The groups registered now. */
  registered(): number[] {
    return [...this.groups.keys()];
  }

  /**
   * Registers the group that `pgid` leads, with `graceMs` between SIGTERM
   * and SIGKILL. To be called right after the spawn, while the leader is
   * this process's child and not yet reaped (so its pid is still its own):
   * its start time tells it from a later process given the same number.
   * False when its `/proc/PGID/stat` cannot be read.
   */
  register(pgid: number, graceMs: number): boolean {
    const startTicks = readProcStat(pgid)?.startTicks;
    if (startTicks === undefined || !Number.isSafeInteger(startTicks)) return false;
    const registration = { startTicks, graceMs: Math.ceil(Math.min(graceMs, 2 ** 31 - 1)) };
    this.groups.set(pgid, registration);
    this.send(line(pgid, registration));
    return true;
  }

  /** Removes a group once it has no live member left. */
  unregister(pgid: number): void {
    if (this.groups.delete(pgid)) this.send(`-${pgid}\n`);
  }

  /** Writes `text` to a running guardian, or starts one, which is told every registered group. */
  private send(text: string): void {
    if (this.running()) {
      this.child!.stdin!.write(text);
      return;
    }
    this.child = this.start();
    this.child?.stdin!.write([...this.groups].map(([pgid, registration]) => line(pgid, registration)).join(''));
  }

  /**
   * A guardian that was killed stays a zombie until this process's event
   * loop reaps it; a look at /proc sees it dead at once, so a group is not
   * written into a pipe nobody reads.
   */
  private running(): boolean {
    const child = this.child;
    return child?.pid !== undefined && child.exitCode === null && child.signalCode === null && isLiveProcess(child.pid);
  }

  private start(): ChildProcess | undefined {
    const mark = spawnMark();
    let child: ChildProcess;
    try {
      child = spawn(this.shell, GUARDIAN_ARGS, {
        stdio: ['pipe', 'ignore', 'ignore'],
        // Its own session: a signal to this process's group (a Ctrl-C) does not reach it.
        detached: true,
        // Pinning no directory of the caller's for as long as it lives.
        cwd: '/',
        env: GUARDIAN_ENV,
      });
    } catch {
      return undefined;
    }
    const gone = (): void => {
      if (this.child === child) this.child = undefined;
      child.stdin?.destroy();
    };
    child.on('error', gone);
    child.on('exit', gone);
    if (!child.stdin) {
      // Out of descriptors: Node.js made pipes it hands to nobody.
      closeOrphanedPipes(mark);
      return undefined;
    }
    child.stdin.on('error', gone);
    // Neither it nor its pipe keeps this process alive.
    child.unref();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    return child;
  }
}

function line(pgid: number, { startTicks, graceMs }: Registration): string {
  return `+${pgid} ${startTicks} ${graceMs}\n`;
}

/** The guardian, once looked for: null where it cannot work. */
interface Slot {
  guardian?: Guardian | null;
}
const slot: Slot = ((globalThis as Record<symbol, Slot | undefined>)[Symbol.for('@sandstream/adapter-local/guardian@1')] ??= {});

/**
 * The guardian of this process (this thread), shared by every copy of this
 * module loaded in it, so that they hold one pipe between them; undefined
 * where it cannot work: no `sh` in the system directories, or no procfs.
 */
export function processGuardian(): Guardian | undefined {
  if (slot.guardian === undefined) {
    const shell = findUtility('sh');
    slot.guardian = shell !== undefined && existsSync('/proc/self/stat') && existsSync('/proc/uptime') ? new Guardian(shell) : null;
  }
  return slot.guardian ?? undefined;
}

/** Interval of the look at a group still alive when its command was released. */
const LINGER_POLL_MS = 1_000;

/**
 * One command's process group registered with this process's guardian,
 * for a driver that does not use the guardian's registration by itself
 * (the isolated mode's, for an environment this process joined).
 */
export class GuardedGroup {
  private registered = true;

  private constructor(private readonly pgid: number) {}

  /**
   * Registers group `pgid` (its host number, its leader alive) with
   * `graceMs` between SIGTERM and SIGKILL; undefined where there is no
   * guardian or the leader's start time cannot be read.
   */
  static register(pgid: number, graceMs: number): GuardedGroup | undefined {
    return processGuardian()?.register(pgid, graceMs) === true ? new GuardedGroup(pgid) : undefined;
  }

  /** The group is gone: the guardian forgets it, so that it never signals a later group of that number. */
  forget(): void {
    if (!this.registered) return;
    this.registered = false;
    processGuardian()?.unregister(this.pgid);
  }

  /**
   * The command was released, perhaps with its group alive (the kill wait
   * ran out): it stays registered, so that this process's death still ends
   * it, until `alive()`, asked now and every second, says it is gone.
   */
  forgetOnceGone(alive: () => boolean): void {
    if (!this.registered || !alive()) return this.forget();
    const timer = setInterval(() => {
      if (alive()) return;
      clearInterval(timer);
      this.forget();
    }, LINGER_POLL_MS);
    timer.unref();
  }
}
