#!/usr/bin/env bash
# Follows docs/guide/autograd.md verbatim (run_guide.sh) against the installed, moved prefix of
# the fixture (install_prefix.sh; section 1 is that install) and checks what the guide says the
# program prints. Run by ctest with the source and build folders as arguments.
set -euo pipefail
source "$(dirname "$0")/installed_guide.sh"
follow_installed_guide "$1" "$2" autograd.md autograd 1
grep -Eq "^w = (3|2\.99[0-9]*|3\.00[0-9]*), b = (2|1\.99[0-9]*|2\.00[0-9]*)$" <<<"$out"
grep -q "^first 12, second 12$" <<<"$out"
grep -q "^gradcheck passed$" <<<"$out"
grep -q "Trying to backward through the graph a second time" <<<"$out"
done_with_guide
