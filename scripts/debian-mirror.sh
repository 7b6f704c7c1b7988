#!/usr/bin/env bash
# Prints the Debian archive this machine's apt is configured with: the URI that serves the
# machine's own release (bookworm), read from apt's index targets, so that scripts fetching
# from the same archive (another suite, another architecture) use the mirror this machine was
# set up with and the repository names none. Nothing on stdout and exit 1 when apt names none.
set -euo pipefail
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || { echo "debian-mirror.sh: error: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }
uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null \
  | awk -v c="$codename" '$2 == c { print $1; exit }')
[ -n "$uri" ] || { echo "debian-mirror.sh: error: apt's sources name no archive for $codename" >&2; exit 1; }
echo "${uri%/}"
