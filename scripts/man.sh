#!/usr/bin/env bash
# One man page from the two sources a verb has: its synopsis (VERB -h -v, through
# help2man) and its reference pages in docs/ (Markdown, through go-md2man), so that
# the page says what the binary and the docs say.
# Usage: VERSION=V scripts/man.sh LATHIST VERB|- NAME-LINE OUT DOC.md...   (- : lathist
# itself; the Makefile's man target exports VERSION)
set -euo pipefail
lathist=$1 verb=$2 name=$3 out=$4
shift 4
include=$(mktemp)
trap 'rm -f "$include"' EXIT
for md in "$@"; do
  # in ASCII (groff under a C locale shows other bytes as ???; iconv spells x for
  # the multiplication sign, -> for an arrow); the page's title goes: what follows it
  # joins DESCRIPTION; its ## sections become
  # the man page's sections (its Synopsis, command lines, the EXAMPLES: help2man's
  # SYNOPSIS is the usage line), ### its subsections
  awk 'NR == 1 && /^# / { print "# >DESCRIPTION"; next }
    /^```/ { fenced = !fenced }
    !fenced && /^##+ / { sub(/^#/, "") }
    { print }' "$md" | iconv -f UTF-8 -t ASCII//TRANSLIT | go-md2man | awk '
    /^\.TH / { next }
    /^\.SH / {
      sub(/^\.SH +/, ""); gsub(/"/, ""); name = toupper($0)
      print "[" (name == "SYNOPSIS" ? "EXAMPLES" : name) "]"; next
    }
    { print }' >>"$include"
done
if [ "$verb" = - ]; then
  help2man -N -s 8 -n "$name" --help-option="-h" --version-string="lathist $VERSION" \
    --include "$include" -o "$out" "$lathist"
else
  help2man -N -s 8 -n "$name" --help-option="-h -v" --version-string="lathist-$verb $VERSION" \
    --include "$include" -o "$out" "$lathist $verb"
fi
