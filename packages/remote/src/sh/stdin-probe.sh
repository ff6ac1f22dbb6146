#!/bin/sh
# Whether anything of a command still holds its standard input open (see stdin-probe.ts):
#   sh -c STDIN_PROBE sandstream-stdin-probe ID
# Exit 0: nothing does, standard input is closed for good; exit 3: a process of the command holds
# the read end of a pipe fed from outside its tree, which is its standard input (a pipe between
# two of the tree's own processes has both ends inside). Needs `readlink`, `grep -z` and
# /proc/<pid>/fdinfo (Linux 2.6.22).

# Its tools by the system's directories: the command's PATH is the caller's.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
grep='grep'

. ./lib/tags.sh

# readers, writers: the pipes the command's processes hold, by their /proc names (`pipe:[N]`).
readers='' writers=''
for environ in $(tagged "$1\$"); do
  proc=${environ%/environ}
  for fd in "$proc"/fd/*; do
    link=$(readlink "$fd" 2>/dev/null) || continue
    # Under gVisor the exec's own streams are the host's descriptors, named `host:[N]`.
    case $link in pipe:*|host:*) ;; *) continue ;; esac
    # The access mode is the last octal digit of the descriptor's flags: 0 read, 1 write, 2 both.
    mode=; { while IFS= read -r line; do case $line in flags:*) mode=$line ;; esac; done < "$proc/fdinfo/${fd##*/}"; } 2>/dev/null
    case $mode in
      *0) readers="$readers $link" ;;
      *1) writers="$writers $link" ;;
      *2) readers="$readers $link" writers="$writers $link" ;;
    esac
  done
done
for pipe in $readers; do case "$writers " in *" $pipe "*) ;; *) exit 3 ;; esac; done
exit 0
