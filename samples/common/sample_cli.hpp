#pragma once
// What every sample program shares on its command line (not part of the library):
//
//  * options are cv::CommandLineParser keys ("{name alias | default | help}"), but checked here
//    first: an option that is not declared, a bare word, or a malformed value is an error naming
//    it, exit status 2 (cv::CommandLineParser alone ignores unknown keys);
//  * --help prints "  --name, -n  help (default: value)" lines, without the parser's
//    "(value:true)" noise;
//  * --assets: the bundled data. Search order: --assets, the executable's ../share/cvattn (an
//    installed sample), then the source tree the sample was built from (CVATTN_ASSETS_DIR);
//  * --input / --weights name files relative to the assets folder unless they exist as given;
//  * folder-processing samples take --list=FILE (one input per line) and --shard=I/N (a
//    deterministic share of the sorted inputs, docs/batch.md).
#include <cstddef>
#include <filesystem>
#include <opencv2/core.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sample {

namespace fs = std::filesystem;

// One declared option of a keys string.
struct Option {
  std::vector<std::string> names;  // "input", "i"
  std::string default_value, help;
};
// The options of a cv::CommandLineParser keys string; std::invalid_argument on malformed keys.
[[nodiscard]] std::vector<Option> parse_keys(const std::string& keys);

// The --assets, --list and --shard keys, for samples to append to their own.
[[nodiscard]] std::string assets_key();
[[nodiscard]] std::string batch_keys();

// Checks argv against `keys` before cv::CommandLineParser sees it. Returns an exit status when
// the program should stop now: 0 after printing --help (about, the option list and
// "Assets: <the folder in use>" to stdout), 2 after "<program>: error: unknown option '--inptu'
// (did you mean --input?)", a bare argument or a missing --assets folder on stderr. std::nullopt:
// go on. Also records --assets for assets_dir().
[[nodiscard]] std::optional<int> check_command_line(int argc, const char* const* argv,
                                                    const std::string& keys,
                                                    const std::string& about);

// The parser's value errors (parser.check() false) as "<program>: error: ..." on stderr;
// returns 2 so that `return sample::value_errors(parser, "x");` ends main.
int value_errors(const cv::CommandLineParser& parser, const char* program);

// The assets folder (search order above); std::runtime_error naming what was tried when none
// exists.
[[nodiscard]] fs::path assets_dir();
// `path` as given when it exists or is absolute, else assets_dir() / path when that exists, else
// `path` unchanged (so the caller's "cannot read" names what the user typed).
[[nodiscard]] fs::path find_asset(const std::string& path);

// "1 contact sheet", "2 contact sheets"; `plural` defaults to singular + "s".
[[nodiscard]] std::string count(std::size_t n, const std::string& singular,
                                const std::string& plural = "");

// --shard=I/N: this process's share. index in [0, count).
struct Shard {
  std::size_t index = 0, count = 1;
};
// "I/N" with 0 <= I < N, N >= 1 (empty text: the whole 0/1); std::runtime_error otherwise.
[[nodiscard]] Shard parse_shard(const std::string& text);
// The inputs of shard `s`: the k-th of the sorted, de-duplicated inputs belongs to shard
// k mod N, so the N shards partition the inputs and together give every one exactly once.
[[nodiscard]] std::vector<fs::path> shard_of(std::vector<fs::path> inputs, Shard s);
// The lines of a --list file (empty lines and lines starting with '#' skipped, surrounding
// blanks trimmed), as paths relative to the current folder. std::runtime_error
// when the file cannot be read.
[[nodiscard]] std::vector<fs::path> read_list(const fs::path& list);

// The inputs of a folder-processing sample: `input` (files or folders separated by ','; a
// folder gives its readable images, not recursive) plus the lines of `list` (if not empty),
// each --input item through find_asset, sorted and de-duplicated, then shard `shard` ("I/N", empty:
// all) of them. std::runtime_error when a path does not exist or there is no input at all (an empty
// shard is not an error).
[[nodiscard]] std::vector<fs::path> select_inputs(const std::string& input, const std::string& list,
                                                  const std::string& shard);

}  // namespace sample
