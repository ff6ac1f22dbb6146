#!/bin/sh
# The helper channel (ADR-0033, "Helpers through a channel"; src/helper-channel.ts):
#   sh -c CHANNEL sandstream-helper-channel
# Reads one helper's words per line on its standard input, runs the helper in a subshell of its
# own, its output nowhere, and answers `<n> <status>` on its standard output.

# One line on standard error first: a backend may hold a process's standard output back until its
# standard error has spoken (Docker does, to tell a refused start's message from the command's
# output).
echo ready >&2
while IFS=" " read -r n op a b c d; do
  (
    # Split on purpose: the words are checked to need no quoting, and absent ones are no words.
    # shellcheck disable=SC2086
    set -- "$op" $a $b $c $d
    . ./helper.sh
  ) </dev/null >/dev/null 2>&1
  echo "$n $?"
done
