#!/usr/bin/env bash
# A package repository's signing key, trusted only if it is the pinned one: KEY_FILE (as the
# repository serves it, armored or not) must hold exactly one primary key, whose fingerprint is
# FINGERPRINT; that key (with its subkeys, whose bindings apt checks against it) is then written
# to KEYRING, for a sources entry's signed-by. Anything else fails, naming what the file held.
#   repository-key.sh KEY_FILE FINGERPRINT KEYRING
# The pin is the primary key, not the file's bytes: a repository re-signs its subkeys and
# re-publishes the file, and the primary key is what every signature chains to.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KEY_FILE FINGERPRINT KEYRING" >&2; exit 2; }
key_file=$1 want=${2^^} keyring=$3
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
gpg_here() { gpg --batch --quiet --homedir "$home" "$@"; }

# --with-colons: each primary key is a `pub` record followed by its `fpr` record, field 10 the
# fingerprint (GnuPG doc/DETAILS, "Format of the colon listings").
listing=$(gpg_here --show-keys --with-colons "$key_file" 2>/dev/null) || listing=""
primaries=$(awk -F: '$1 == "pub" { getline; if ($1 == "fpr") print $10 }' <<< "$listing" | paste -sd' ' -)
if [ "$primaries" != "$want" ]; then
  echo "$key_file: holds primary key(s) [${primaries:-none}], not exactly the pinned $want" >&2
  exit 1
fi
gpg_here --import "$key_file" 2>/dev/null
gpg_here --export "$want" > "$keyring"
echo "trusted $want in $keyring"
