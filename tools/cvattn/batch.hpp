#pragma once
// Batch mode of `cvattn run` (docs/batch.md), an addition to the contract of docs/cli.md:
//
//   cvattn run OP --list=FILE [--shard=I/N] [--in NAME=FILE.npy]... [--weights W]
//                 [--set KEY=VALUE]... --out NAME=PATTERN... [--threads T]
//
// Each non-empty line of FILE that does not start with '#' is one job: whitespace-separated
// NAME=FILE.npy tokens (a bare FILE.npy means the op's first input). The --in given on the
// command line are shared by every job (a job's own token wins). The jobs are sorted (by the
// line's text, trimmed) and de-duplicated, and --shard=I/N keeps the k-th job when k mod N == I,
// so N shards together run every job exactly once. Each --out PATTERN must contain "{}", which
// is replaced by the stem of the job's first input file (name without folder and extension):
// --out output=out/{}.npy. Two jobs whose outputs would share a name are an input error. Without
// --list nothing changes: "{}" in an --out file is literal, as before.
#include <string>
#include <vector>

#include "cli.hpp"

namespace cvattn::cli {

// --shard I/N -> (I, N); UsageError unless 0 <= I < N.
[[nodiscard]] std::pair<std::size_t, std::size_t> parse_shard(const std::string& text);

// The single-input plans of a batch plan (plan.list_file set), this shard's only, in order.
// Reads the list through `read`. UsageError / IoError on a malformed list or pattern.
[[nodiscard]] std::vector<RunPlan> expand_batch(const RunPlan& plan, const FileReader& read);

}  // namespace cvattn::cli
