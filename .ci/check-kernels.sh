#!/usr/bin/env bash
# Fails when docs/kernels.md, the inventory of the SIMD-dispatched kernels, no longer matches the
# code, so that "every dispatched kernel has a reference twin and a parity test on every target"
# stays true as kernels come and go: each HWY_EXPORT(Body) in src/ needs a row; each row must name
# a body its source still exports, a reference twin defined in src/functional/reference/*.hpp
# (rows of size or preference helpers, marked "—", are exempt), and parity tests TEST(Suite, Name)
# in tests/ that call for_each_simd_target (themselves or through a function of their file). The
# few bodies checked against something other than a twin are marked "none" and must be listed in
# known_gaps below, so that a new one is a decision made here rather than a quiet row. Reads files
# only; builds nothing.
# shellcheck disable=SC2016  # the backticks in single quotes are Markdown's
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/kernels.md
known_gaps=()

errors=()
fail() { errors+=("$1"); }

# every_target FILE SUITE.NAME: whether that TEST of FILE runs for_each_simd_target, in its own
# body or in a function of FILE it calls (clang-format's layout: a definition starts in column 0
# and ends at the next "}" there).
every_target() {
  awk -v want="$2" '
    function close_block() { if (name != "") body[name] = text; name = ""; text = ""; open = 0 }
    open && /^}/ { text = text $0 "\n"; close_block(); next }
    open { text = text $0 "\n"; next }
    /^[A-Za-z]/ && /\(/ && !/;$/ && !/^(namespace|using|template|struct|class|enum|constexpr)/ {
      n = $0
      if (n ~ /^TEST\(/) {
        sub(/^TEST\(/, "", n); sub(/\).*/, "", n); sub(/, */, ".", n)
      } else {
        sub(/\(.*/, "", n); sub(/.*[ *&]/, "", n)
      }
      name = n; text = $0 "\n"; open = 1
      if ($0 ~ /}$/) close_block()
    }
    END {
      for (n in body) if (body[n] ~ /for_each_simd_target\(/) every[n] = 1
      for (round = 0; round < 3; ++round)
        for (n in body)
          if (!(n in every))
            for (f in every)
              if (f !~ /\./ && body[n] ~ ("[^A-Za-z0-9_:]" f "\\(")) every[n] = 1
      exit !(want in every)
    }' "$1"
}

# "Body path" for every body exported in src/.
declare -A exported=()
while IFS=: read -r file line; do
  body=$(sed -E 's/^[[:space:]]*HWY_EXPORT\(([A-Za-z0-9_]+)\);.*/\1/' <<<"$line")
  exported["$body $file"]=1
done < <(grep -rE --include='*.cpp' '^[[:space:]]*HWY_EXPORT\([A-Za-z0-9_]+\);' src)

# The functions the reference twins define, as "header name", and every TEST(Suite, Name) of
# tests/ as "Suite.Name" -> its files.
declare -A twin=() test_files=()
for header in src/functional/reference/*.hpp; do
  # A definition starts in column 0: its name is the identifier before the line's first "(".
  while read -r name; do
    twin["${header#src/functional/} $name"]=1
  done < <(sed -nE 's#^([A-Za-z][^(/]*[ *&])([a-z_][a-z0-9_]*)\(.*#\2#p' "$header")
done
while IFS=: read -r file t; do
  key=$(sed -E 's/^TEST\(([A-Za-z0-9_]+), *([A-Za-z0-9_]+)\)$/\1.\2/' <<<"$t")
  test_files["$key"]+="$file "
done < <(grep -roE --include='*.cpp' '^TEST\([A-Za-z0-9_]+, *[A-Za-z0-9_]+\)' tests)

declare -A rows=() gap_rows=()
helpers=0
while IFS=$'\t' read -r body src twin_cell tests_cell; do
  [[ $body =~ ^[A-Za-z0-9_]+$ ]] || {
    fail "a row of $doc has no body in backticks: '$body'"
    continue
  }
  [ -z "${rows["$body $src"]:-}" ] || fail "$body: two rows for $src"
  rows["$body $src"]=1
  # (b) The body is still exported, by the source the row names.
  [ -n "${exported["$body $src"]:-}" ] || fail "$body: $src exports no such body (HWY_EXPORT)"
  # (c) The reference twin exists; "—" (a size or a preference) and known "none" gaps excepted.
  if [[ $twin_cell == —* ]]; then
    helpers=$((helpers + 1))
  elif [[ $twin_cell == none* ]]; then
    gap_rows["$body"]=1
    [[ " ${known_gaps[*]} " == *" $body "* ]] ||
      fail "$body: marked none (no reference twin) but not in known_gaps of $0"
  else
    mapfile -t names < <(grep -oE '`reference::[a-z_][a-z0-9_]*`' <<<"$twin_cell" | tr -d '`')
    mapfile -t headers < <(grep -oE '`reference/[a-z0-9_]+\.hpp`' <<<"$twin_cell" | tr -d '`')
    [ ${#names[@]} -gt 0 ] || fail "$body: no \`reference::name\` in its twin column"
    [ ${#headers[@]} -gt 0 ] ||
      mapfile -t headers < <(cd src/functional && printf '%s\n' reference/*.hpp)
    for name in "${names[@]}"; do
      found=0
      for h in "${headers[@]}"; do
        [ -z "${twin["$h ${name#reference::}"]:-}" ] || found=1
      done
      [ $found = 1 ] || fail "$body: twin $name is not defined in ${headers[*]}"
    done
  fi
  # (d) Each parity test exists and runs on every SIMD target.
  mapfile -t names < <(grep -oE '`[A-Za-z0-9_]+\.[A-Za-z0-9_]+`' <<<"$tests_cell" | tr -d '`')
  [ ${#names[@]} -gt 0 ] || fail "$body: no \`Suite.Name\` in its parity test column"
  for t in "${names[@]}"; do
    files=${test_files["$t"]:-}
    [ -n "$files" ] || {
      fail "$body: parity test $t has no TEST(${t%%.*}, ${t#*.}) in tests/"
      continue
    }
    for f in $files; do
      every_target "$f" "$t" || fail "$body: parity test $t ($f) never calls for_each_simd_target"
    done
  done
done < <(awk -F'|' '/^\| `/ {
  for (i = 2; i <= 5; i++) { gsub(/^ +| +$/, "", $i) }
  body = $2; gsub(/`/, "", body)
  src = $3; sub(/^`/, "", src); sub(/`.*/, "", src)
  print body "\t" src "\t" $4 "\t" $5
}' "$doc")

# (a) Every exported body has a row.
for key in "${!exported[@]}"; do
  [ -n "${rows["$key"]:-}" ] || fail "${key% *}: exported in ${key#* } but has no row in $doc"
done
for gap in "${known_gaps[@]}"; do
  [ -n "${gap_rows["$gap"]:-}" ] ||
    fail "$gap: in known_gaps of $0 but no row of $doc marks it none (remove it from the list)"
done

if [ ${#errors[@]} -gt 0 ]; then
  echo "check-kernels: $doc does not match the code (${#errors[@]} problem(s)):" >&2
  printf '  %s\n' "${errors[@]}" | sort >&2
  exit 1
fi
total=${#exported[@]}
echo "check-kernels: $total dispatched bodies, each with a parity test on every SIMD target;" \
  "$((total - helpers - ${#known_gaps[@]})) with a reference twin, $helpers size/preference" \
  "helpers, ${#known_gaps[@]} without a twin${known_gaps[*]:+ (${known_gaps[*]})}"
