// The cvattn command-line tool as a library: the contract is docs/cli.md.
#include "cli.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <map>
#include <new>
#include <opencv2/core.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "batch.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/simd.hpp"
#include "cvattn/io/file.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/version.hpp"

namespace cvattn::cli {
namespace {

constexpr const char* kUsage =
    "usage: cvattn run OP [--in NAME=FILE.npy]... [--weights FILE.safetensors]\n"
    "                     [--set KEY=VALUE]... [--out NAME=FILE.npy]...\n"
    "                     [--repeat R] [--threads T]\n"
    "       cvattn run OP --list FILE [--shard I/N] [--in NAME=FILE.npy]... [--weights W]\n"
    "                     [--set KEY=VALUE]... --out NAME=DIR/{}.npy...   (batch: one job per\n"
    "                     line of FILE, {} = the stem of the job's first input; docs/batch.md)\n"
    "       cvattn list          one line per op: name, inputs, outputs, settings\n"
    "       cvattn info          version, OpenCV/Eigen versions, OpenMP threads, SIMD level\n"
    "       cvattn --help | cvattn run --help | cvattn run OP --help\n";

const char* type_name(SettingType t) {
  switch (t) {
    case SettingType::integer:
      return "int";
    case SettingType::pair:
      return "int or h,w";
    case SettingType::real:
      return "float";
    case SettingType::boolean:
      return "bool";
    case SettingType::word:
      return "word";
    case SettingType::shape:
      return "shape";
    case SettingType::int_list:
      return "int list";
  }
  return "";
}

const OpSpec& find_op(const std::string& name) {
  for (const auto& op : all_ops()) {
    if (op.name == name) return op;
  }
  std::string names;
  for (const auto& op : all_ops()) names += (names.empty() ? "" : ", ") + op.name;
  throw UsageError("unknown op '" + name + "' (ops: " + names + ")");
}

std::string op_help(const OpSpec& op) {
  std::ostringstream out;
  out << "cvattn run " << op.name << "  (mirrors " << op.mirrors << ")\n  inputs:\n";
  for (const auto& i : op.inputs) {
    out << "    --in " << i.name << "=FILE.npy  " << i.shape << (i.optional ? " (optional)" : "")
        << "\n";
  }
  if (op.needs_weights) out << "  --weights FILE.safetensors (required)\n";
  out << "  settings:\n";
  if (op.settings.empty()) out << "    none\n";
  for (const auto& s : op.settings) {
    out << "    --set " << s.key << "=" << type_name(s.type);
    if (!s.words.empty()) {
      std::string w;
      for (const auto& x : s.words) w += (w.empty() ? "" : "|") + x;
      out << " (" << w << ")";
    }
    out << "  default "
        << (s.default_value.empty() ? (s.optional ? "unset" : "required") : s.default_value) << "  "
        << s.help << "\n";
  }
  out << "  outputs:\n";
  for (const auto& o : op.outputs) {
    out << "    --out " << o.name << "=FILE.npy  " << o.shape << "\n";
  }
  return out.str();
}

std::string list_line(const OpSpec& op) {
  std::string in, outs, sets;
  for (const auto& i : op.inputs) in += (in.empty() ? "" : ",") + i.name + (i.optional ? "?" : "");
  for (const auto& o : op.outputs) outs += (outs.empty() ? "" : ",") + o.name;
  for (const auto& s : op.settings) {
    sets += (sets.empty() ? "" : ",") + s.key + "=" +
            (s.default_value.empty() ? (s.optional ? "" : "REQUIRED") : s.default_value);
    if (s.default_value.empty() && !s.words.empty()) {  // a required choice: list the choices
      std::string w;
      for (const auto& x : s.words) w += (w.empty() ? "" : "|") + x;
      sets += "(" + w + ")";
    }
  }
  if (op.needs_weights) in += (in.empty() ? "" : ",") + std::string("--weights");
  return op.name + "\tinputs: " + (in.empty() ? "-" : in) + "\toutputs: " + outs +
         "\tsettings: " + (sets.empty() ? "-" : sets);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The build's baseline instruction set (what the tool, built with the library's flags, assumes),
// then the runtime-dispatched kernels: compiled targets, what this CPU runs, the one in use.
std::string simd_level() {
  std::string baseline =
#if defined(__AVX512F__)
      "AVX-512";
#elif defined(__AVX2__)
      "AVX2";
#elif defined(__AVX__)
      "AVX";
#elif defined(__SSE4_2__)
      "SSE4.2";
#elif defined(__SSE2__)
      "SSE2";
#elif defined(__ARM_NEON)
      "NEON";
#else
      "scalar";
#endif
#if defined(__FMA__)
  baseline += "+FMA";
#endif
  return "baseline " + baseline + "; dispatched kernels compiled for " +
         join(cvattn::simd::compiled_targets()) + "; this CPU runs " +
         join(cvattn::simd::supported_targets()) + "; in use: " + cvattn::simd::current_target() +
         " (CVATTN_SIMD=<target> caps it); GEMM: " + cvattn::simd::gemm_backend();
}

// "NAME=VALUE" -> {NAME, VALUE}
std::pair<std::string, std::string> split_assignment(const std::string& arg, const char* flag) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError(std::string(flag) + " expects NAME=VALUE, got '" + arg + "'");
  }
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::int64_t positive(const std::string& value, const char* flag, std::int64_t max) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < 1) {
    throw UsageError(std::string(flag) + " expects a positive integer, got '" + value + "'");
  }
  if (v > max) {
    throw UsageError(std::string(flag) + " expects at most " + std::to_string(max) + ", got '" +
                     value + "'");
  }
  return v;
}

// Parses `run OP ...` (args[0] is OP). Sets `help` and returns early at a --help in flag
// position, as the options before it were parsed, so errors before it still win.
RunPlan parse_run(const std::vector<std::string>& args, bool& help) {
  RunPlan plan;
  help = false;
  plan.op = &find_op(args[0]);
  const OpSpec& op = *plan.op;
  std::map<std::string, std::string> sets;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i], value;
    if (flag == "--help" || flag == "-h") {
      help = true;
      return plan;
    }
    const auto eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      value = args[++i];
    }
    if (flag == "--in") {
      const auto [name, file] = split_assignment(value, "--in");
      if (!plan.in_files.emplace(name, file).second) {
        throw UsageError("--in " + name + " given twice");
      }
    } else if (flag == "--out") {
      const auto [name, file] = split_assignment(value, "--out");
      if (!plan.out_files.emplace(name, file).second) {
        throw UsageError("--out " + name + " given twice");
      }
    } else if (flag == "--set") {
      const auto [key, v] = split_assignment(value, "--set");
      if (!sets.emplace(key, v).second) throw UsageError("--set " + key + " given twice");
    } else if (flag == "--weights") {
      if (!plan.weights_file.empty()) throw UsageError("--weights given twice");
      plan.weights_file = value;
    } else if (flag == "--repeat") {
      plan.repeat = positive(value, "--repeat", 1000000000);
    } else if (flag == "--threads") {
      // More threads than this makes OpenMP abort or crash while creating them.
      plan.threads = positive(value, "--threads", kMaxThreads);
    } else if (flag == "--list") {  // batch mode, batch.hpp
      if (!plan.list_file.empty()) throw UsageError("--list given twice");
      if (value.empty()) throw UsageError("--list needs a file");
      plan.list_file = value;
    } else if (flag == "--shard") {
      if (!plan.shard.empty()) throw UsageError("--shard given twice");
      (void)parse_shard(value);
      plan.shard = value;
    } else {
      throw UsageError("unknown option '" + flag + "' (see cvattn run " + op.name + " --help)");
    }
  }

  // Validate names before reading any file.
  for (const auto& entry : plan.in_files) {
    const std::string& name = entry.first;  // clang 14 cannot capture structured bindings
    const bool known = std::any_of(op.inputs.begin(), op.inputs.end(),
                                   [&](const InputSpec& s) { return s.name == name; });
    if (!known) {
      std::string names;
      for (const auto& s : op.inputs) names += (names.empty() ? "" : ", ") + s.name;
      throw UsageError("op '" + op.name + "' has no input '" + name +
                       "' (inputs: " + (names.empty() ? "none" : names) + ")");
    }
  }
  if (!plan.shard.empty() && plan.list_file.empty()) {
    throw UsageError("--shard needs --list FILE");
  }
  for (const auto& s : op.inputs) {
    if (plan.list_file.empty() && !s.optional && !plan.in_files.count(s.name)) {
      throw UsageError("op '" + op.name + "' needs --in " + s.name + "=FILE.npy " + s.shape);
    }
  }
  for (const auto& entry : plan.out_files) {
    const std::string& name = entry.first;
    const bool known = std::any_of(op.outputs.begin(), op.outputs.end(), [&](const OutputSpec& s) {
      return s.name == name || s.name == "<path>";
    });
    if (!known) {
      std::string names;
      for (const auto& s : op.outputs) names += (names.empty() ? "" : ", ") + s.name;
      throw UsageError("op '" + op.name + "' has no output '" + name + "' (outputs: " + names +
                       ")");
    }
  }
  if (op.needs_weights && plan.weights_file.empty()) {
    throw UsageError("op '" + op.name + "' needs --weights FILE.safetensors");
  }
  if (!op.needs_weights && !plan.weights_file.empty()) {
    throw UsageError("op '" + op.name + "' takes no --weights");
  }
  plan.settings.emplace(op.name, op.settings, sets);
  return plan;
}

Command print(std::string text) {
  Command c;
  c.kind = Command::Kind::print;
  c.text = std::move(text);
  return c;
}

int execute(const RunPlan& plan, std::ostream& out) {
  if (!plan.list_file.empty()) {  // batch mode: the jobs of this shard, one after the other
    for (const RunPlan& job : expand_batch(plan, read_real_file)) execute(job, out);
    return 0;
  }
  const OpSpec& op = *plan.op;
  if (plan.threads > 0) set_num_threads(static_cast<int>(plan.threads));
  const Invocation inv = load_invocation(plan, read_real_file);
  const Computation compute = op.prepare(inv);
  Outputs outputs = compute();
  for (const auto& [name, file] : plan.out_files) {
    const auto it = outputs.find(name);
    if (it == outputs.end() || !it->second.defined()) {
      std::string produced;
      for (const auto& o : outputs) produced += (produced.empty() ? "" : ", ") + o.first;
      throw ValueError("op '" + op.name + "' produced no '" + name +
                       "' for these inputs and weights (produced: " + produced + ")");
    }
  }
  if (plan.repeat > 0) {
    std::vector<double> ms;
    for (std::int64_t r = 0; r < plan.repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const Outputs o = compute();
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    char line[256];
    std::snprintf(line, sizeof line,
                  "{\"op\":\"%s\",\"repeat\":%lld,\"threads\":%d,\"median_ms\":%.6f,"
                  "\"min_ms\":%.6f}\n",
                  op.name.c_str(), static_cast<long long>(plan.repeat), num_threads(), median,
                  sorted.front());
    out << line << std::flush;
  }
  for (const auto& [name, file] : plan.out_files) {
    try {
      io::write_npy(file, outputs.at(name));
    } catch (const Error& e) {
      throw IoError("--out " + name + ": " + e.what());
    }
  }
  return 0;
}

// The contract promises one line on stderr.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

Command parse_command(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("no command given (see cvattn --help)");
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") return print(kUsage);
  if (cmd == "--version") return print(std::string("cvattn ") + CVATTN_VERSION_STRING + "\n");
  if (cmd == "list") {
    if (args.size() > 1) throw UsageError("'cvattn list' takes no arguments");
    std::string text;
    for (const auto& op : all_ops()) text += list_line(op) + "\n";
    return print(text);
  }
  if (cmd == "info") {
    if (args.size() > 1) throw UsageError("'cvattn info' takes no arguments");
    std::ostringstream text;
    text << "cvattn " << CVATTN_VERSION_STRING << "\n"
         << "OpenCV " << CV_VERSION << "\n"
         << "Eigen " << EIGEN_WORLD_VERSION << "." << EIGEN_MAJOR_VERSION << "."
         << EIGEN_MINOR_VERSION << "\n"
         << "OpenMP threads " << num_threads() << "\n"
         << "SIMD " << simd_level() << "\n";
    return print(text.str());
  }
  if (cmd != "run") throw UsageError("unknown command '" + cmd + "' (commands: run, list, info)");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (rest.empty() || rest[0] == "--help" || rest[0] == "-h") return print(kUsage);
  bool help = false;
  Command c;
  c.kind = Command::Kind::run;
  c.plan = parse_run(rest, help);
  if (help) return print(op_help(*c.plan.op));
  return c;
}

std::vector<char> read_real_file(const std::string& path) { return io::read_file(path); }

Invocation load_invocation(const RunPlan& plan, const FileReader& read) {
  CVATTN_CHECK(plan.op != nullptr && plan.settings.has_value(), ValueError,
               "cvattn: load_invocation needs a parsed run plan");
  Invocation inv{{}, std::nullopt, *plan.settings};
  for (const auto& entry : plan.out_files) inv.wanted.insert(entry.first);
  // A file named by several inputs is read once and they share the tensor, as a Python caller
  // passes one tensor for all three in self-attention (mha: query, key and value), which the
  // module then recognises.
  std::map<std::string, Tensor> by_file;
  for (const auto& [name, file] : plan.in_files) {
    try {
      const auto seen = by_file.find(file);
      if (seen != by_file.end()) {
        inv.inputs.emplace(name, seen->second);
        continue;
      }
      const std::vector<char> bytes = read(file);
      const Tensor t = io::parse_npy(bytes.data(), bytes.size(), file);
      inv.inputs.emplace(name, t);
      by_file.emplace(file, t);
    } catch (const Error& e) {
      throw IoError("--in " + name + ": " + e.what());
    }
  }
  if (!plan.weights_file.empty()) {
    try {
      const std::vector<char> bytes = read(plan.weights_file);
      inv.weights = io::parse_safetensors(bytes.data(), bytes.size(), plan.weights_file);
    } catch (const Error& e) {
      throw IoError(std::string("--weights: ") + e.what());
    }
  }
  return inv;
}

void apply_max_tensor_bytes(const char* value) {
  if (value == nullptr) return;
  const std::string s = value;
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::int64_t unit = 1;
  const std::string suffix = s.substr(digits);
  if (suffix == "K" || suffix == "k") unit = std::int64_t{1} << 10;
  if (suffix == "M" || suffix == "m") unit = std::int64_t{1} << 20;
  if (suffix == "G" || suffix == "g") unit = std::int64_t{1} << 30;
  const bool suffix_ok = suffix.empty() || unit != 1;
  std::int64_t bytes = 0;
  bool ok = digits > 0 && digits <= 18 && suffix_ok;
  if (ok) {
    const std::int64_t n = std::stoll(s.substr(0, digits));
    ok = n > 0 && n <= INT64_MAX / unit;
    if (ok) bytes = n * unit;
  }
  if (!ok) {
    throw UsageError("CVATTN_MAX_TENSOR_BYTES='" + s +
                     "' is not a positive byte count (such as 1073741824, 512M or 8G)");
  }
  set_max_tensor_bytes(bytes);
}

int main_entry(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    apply_max_tensor_bytes(std::getenv("CVATTN_MAX_TENSOR_BYTES"));
    const Command command = parse_command(args);
    if (command.kind == Command::Kind::print) {
      out << command.text << std::flush;
      return 0;
    }
    return execute(command.plan, out);
  } catch (const Error& e) {
    err << "cvattn: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "cvattn: error: internal: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    err << "cvattn: error: internal: " << one_line(e.what()) << "\n";
    return 1;
  }
}

}  // namespace cvattn::cli
