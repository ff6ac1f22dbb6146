// Worker thread that watches one process group and reports the moment it is
// gone, independently of the main thread's event loop (which is busy doing
// the teardown being measured).
//
// "Gone" is process.kill(-pgid, 0) failing with ESRCH. On Linux a group
// whose only remaining members are zombies parented elsewhere (orphans whose
// reaper is init) is also reported, as `zombies`: those processes have ended,
// and some init processes (for example in minimal VMs and containers) reap
// late or never, so ESRCH would come late or never. Members are followed
// through /proc/<pid>/task/<pid>/children as they fork, over file
// descriptors kept open so that one poll costs a few preads; a full /proc
// scan confirms that no live member was missed before `zombies` is reported.
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { allProcs, HAS_PROCFS, isLiveMember } from './procfs.mjs';

const nap = new Int32Array(new SharedArrayBuffer(4));
const buffer = Buffer.alloc(4096);

function open(path) {
  try {
    return openSync(path, 'r');
  } catch {
    return -1;
  }
}

function pread(fd) {
  if (fd < 0) return undefined;
  try {
    return buffer.toString('latin1', 0, readSync(fd, buffer, 0, buffer.length, 0));
  } catch {
    return undefined; // ESRCH: reaped
  }
}

/** A member followed over open /proc descriptors. */
class Member {
  constructor(pid) {
    this.pid = pid;
    this.statFd = open(`/proc/${pid}/stat`);
    this.childrenFd = open(`/proc/${pid}/task/${pid}/children`);
  }
  stat() {
    const text = pread(this.statFd);
    if (text === undefined) return undefined;
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ', 3);
    return { pid: this.pid, state: rest[0], ppid: Number(rest[1]), pgrp: Number(rest[2]) };
  }
  children() {
    const text = pread(this.childrenFd);
    return text === undefined ? [] : text.split(' ').filter((s) => s !== '').map(Number);
  }
  close() {
    if (this.statFd >= 0) closeSync(this.statFd);
    if (this.childrenFd >= 0) closeSync(this.childrenFd);
  }
}

function liveMembers(pgid, ownerPid) {
  return allProcs()
    .filter((stat) => isLiveMember(stat, pgid, ownerPid))
    .map((stat) => stat.pid);
}

function groupExists(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    if (error.code === 'ESRCH') return false;
    if (error.code === 'EPERM') return true;
    throw error;
  }
}

parentPort.on('message', ({ pgid, ownerPid, timeoutMs }) => {
  const members = new Map();
  const follow = (pid) => {
    if (!members.has(pid)) members.set(pid, new Member(pid));
  };
  if (HAS_PROCFS) for (const pid of liveMembers(pgid, ownerPid)) follow(pid);
  const deadline = process.hrtime.bigint() + BigInt(Math.round(timeoutMs * 1e6));
  parentPort.postMessage({ type: 'armed' });
  let polls = 0;
  let how;
  let at;
  for (;;) {
    polls++;
    at = process.hrtime.bigint();
    if (!groupExists(pgid)) {
      how = 'esrch';
      break;
    }
    if (HAS_PROCFS) {
      // Members exist: are any of them still running?
      let anyLive = false;
      for (const member of [...members.values()]) {
        if (isLiveMember(member.stat(), pgid, ownerPid)) {
          anyLive = true;
          for (const child of member.children()) follow(child);
        } else {
          member.close();
          members.delete(member.pid);
        }
      }
      if (!anyLive) {
        // Confirm with a full scan; the group ended when the check above saw it.
        const missed = liveMembers(pgid, ownerPid);
        if (missed.length === 0) {
          // The last member may have been reaped meanwhile.
          how = groupExists(pgid) ? 'zombies' : 'esrch';
          break;
        }
        for (const pid of missed) follow(pid);
      }
    }
    if (process.hrtime.bigint() > deadline) {
      at = process.hrtime.bigint();
      how = 'timeout';
      break;
    }
    // Yield the core for ~100 µs between polls: tight, but leaves room for
    // the processes being torn down on a small machine.
    Atomics.wait(nap, 0, 0, 0.1);
  }
  for (const member of members.values()) member.close();
  parentPort.postMessage({ type: 'gone', at, how, polls });
});
