#pragma once
// The cvattn tool as a library (target cvattn_cli): argument parsing and validation separated
// from file access and execution, so that tests and the fuzz_cli_args fuzzer can drive the
// parser with any argv without touching the file system. main.cpp only calls main_entry.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "op.hpp"

namespace cvattn::cli {

// A usage error (bad command line): exit status 2 like every input error.
struct UsageError : Error {
  using Error::Error;
};

// Everything `cvattn run OP ...` asked for, parsed and validated, before any file is read.
struct RunPlan {
  const OpSpec* op = nullptr;
  std::map<std::string, std::string> in_files;   // input name -> .npy path
  std::map<std::string, std::string> out_files;  // output name -> .npy path
  std::string weights_file;                      // empty: no --weights
  std::int64_t repeat = 0;                       // 0: no timing
  std::int64_t threads = 0;                      // 0: OpenMP's default
  std::optional<Settings> settings;              // always set by parse_command for a run
  std::string list_file;                         // batch mode (batch.hpp): one job per line
  std::string shard;                             // batch mode: "I/N", empty: every job
};

// A parsed command line: either text for stdout (help, list, info, --version) or a run.
struct Command {
  enum class Kind { print, run };
  Kind kind = Kind::print;
  std::string text;
  RunPlan plan;
};

// Parses argv without the program name. Throws a cvattn::Error (UsageError, ValueError) for
// every malformed command line; reads no file and changes no global state.
[[nodiscard]] Command parse_command(const std::vector<std::string>& args);

// Reads a whole file. The default is io::read_file; the fuzzer substitutes an in-memory table.
using FileReader = std::function<std::vector<char>(const std::string& path)>;
[[nodiscard]] std::vector<char> read_real_file(const std::string& path);

// Reads the plan's inputs and weights through `read` (IoError naming the flag on any problem).
[[nodiscard]] Invocation load_invocation(const RunPlan& plan, const FileReader& read);

// Applies CVATTN_MAX_TENSOR_BYTES (a positive byte count, optionally with a K, M or G suffix
// for KiB, MiB, GiB) to cvattn::set_max_tensor_bytes; UsageError naming the variable if the
// value is malformed. `value` null means unset (the library default stays).
void apply_max_tensor_bytes(const char* value);

// The whole tool: parses, loads, runs, writes; returns the exit status (0, 1 or 2) and writes
// diagnostics to err as one line starting with "cvattn: error: ".
int main_entry(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cvattn::cli
