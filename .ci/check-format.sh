#!/usr/bin/env bash
# Fails when a C++ source (tracked, or new and not ignored, so that it fails before `git add`
# as it would after) is not formatted as .clang-format says (clang-format 14,
# Debian's clang-format-14). Fix with:
#   git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.h' | xargs clang-format-14 -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format-14 >/dev/null 2>&1; then
  echo "check-format: installing clang-format-14" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends clang-format-14 >/dev/null
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.h')
# Many files per clang-format process, two at a time: one process per file spent most of a minute
# starting up. Only when that finds a difference is each file checked alone, to name it.
if printf '%s\0' "${files[@]}" | xargs -0 -P 2 -n 64 clang-format-14 --dry-run --Werror >/dev/null 2>&1; then
  echo "check-format: ${#files[@]} files formatted"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format-14 --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) not formatted (clang-format-14 -i <file>):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
