# Shared by the programs that find their own tools (scripts/embed-sh.mjs splices it in where a
# program sources it).

# tool NAME: sets the variable NAME to the path of the program NAME in the system's standard
# directories; false, and the variable untouched, when there is none. The command's PATH is the
# caller's, and may lack them or name others.
tool() {
  for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -x "$d/$1" ] && { eval "$1=\$d/\$1"; return 0; }
  done
  return 1
}
