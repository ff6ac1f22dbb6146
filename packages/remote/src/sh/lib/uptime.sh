# Shared by the supervisor and the helper, which read and write the owner lease (scripts/
# embed-sh.mjs splices it in where a program sources it).
# shellcheck disable=SC2034 # now is for the program that sources this file

# now_cs: sets now to the sandbox's uptime in centiseconds, the owner lease's clock. The
# fraction's leading 0 goes: $((...)) would read "05" as octal.
now_cs() {
  IFS=' .' read -r up_s up_c _ < /proc/uptime
  up_c=${up_c#0}
  now=$((up_s * 100 + up_c))
}
