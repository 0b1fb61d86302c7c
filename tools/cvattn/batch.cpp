#include "batch.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace cvattn::cli {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::size_t index_number(const std::string& s, const std::string& text) {
  const bool digits = !s.empty() && s.size() <= 9 &&
                      std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw UsageError("--shard expects I/N with 0 <= I < N, got '" + text + "'");
  return static_cast<std::size_t>(std::stoul(s));
}

}  // namespace

std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    throw UsageError("--shard expects I/N with 0 <= I < N, got '" + text + "'");
  }
  const std::size_t i = index_number(text.substr(0, slash), text);
  const std::size_t n = index_number(text.substr(slash + 1), text);
  if (n < 1 || i >= n) throw UsageError("--shard expects I/N with 0 <= I < N, got '" + text + "'");
  return {i, n};
}

std::vector<RunPlan> expand_batch(const RunPlan& plan, const FileReader& read) {
  const OpSpec& op = *plan.op;
  for (const auto& [name, pattern] : plan.out_files) {
    if (pattern.find("{}") == std::string::npos) {
      throw UsageError("--list: --out " + name + "=" + pattern +
                       " must contain {} (the job's input stem), e.g. out/{}.npy");
    }
  }
  if (plan.out_files.empty()) throw UsageError("--list needs at least one --out NAME=PATTERN");
  if (plan.repeat > 0) throw UsageError("--list and --repeat cannot be combined");
  if (op.inputs.empty()) throw UsageError("op '" + op.name + "' has no inputs to list");

  std::vector<char> bytes;
  try {
    bytes = read(plan.list_file);
  } catch (const Error& e) {
    throw IoError(std::string("--list: ") + e.what());
  }
  std::set<std::string> lines;
  std::istringstream text(std::string(bytes.begin(), bytes.end()));
  for (std::string line; std::getline(text, line);) {
    line = trim(line);
    if (!line.empty() && line[0] != '#') lines.insert(line);
  }
  if (lines.empty()) throw UsageError("--list " + plan.list_file + " names no job");

  // Each line's inputs, parsed; jobs are sorted and de-duplicated by them (not by spelling).
  std::map<std::map<std::string, std::string>, std::pair<std::string, std::string>> jobs;
  for (const std::string& line : lines) {
    std::map<std::string, std::string> in_files = plan.in_files;
    std::istringstream tokens(line);
    std::string first;
    for (std::string token; tokens >> token;) {
      std::string name = op.inputs.front().name, file = token;
      const auto eq = token.find('=');
      if (eq != std::string::npos) {
        name = token.substr(0, eq);
        file = token.substr(eq + 1);
      }
      const bool known = std::any_of(op.inputs.begin(), op.inputs.end(),
                                     [&](const InputSpec& s) { return s.name == name; });
      if (!known || file.empty()) {
        throw UsageError("--list: line '" + line + "': op '" + op.name + "' has no input '" + name +
                         "'");
      }
      in_files[name] = file;
      if (first.empty()) first = file;
    }
    for (const auto& s : op.inputs) {
      if (!s.optional && !in_files.count(s.name)) {
        throw UsageError("--list: line '" + line + "' gives no --in " + s.name);
      }
    }
    jobs.emplace(std::move(in_files), std::make_pair(line, first));
  }

  std::vector<RunPlan> all;
  std::map<std::string, std::string> stems;  // output stem -> line
  for (const auto& [in_files, origin] : jobs) {
    const auto& [line, first] = origin;
    RunPlan job = plan;
    job.list_file.clear();
    job.shard.clear();
    job.in_files = in_files;
    const std::string stem = std::filesystem::path(first).stem().string();
    if (!stems.emplace(stem, line).second) {
      throw UsageError("--list: lines '" + stems[stem] + "' and '" + line +
                       "' would write the same outputs (input stem '" + stem + "')");
    }
    for (auto& [name, pattern] : job.out_files) {
      std::string file = pattern;
      for (auto at = file.find("{}"); at != std::string::npos; at = file.find("{}", at)) {
        file.replace(at, 2, stem);
        at += stem.size();
      }
      pattern = file;
    }
    all.push_back(std::move(job));
  }
  const auto [index, count] =
      plan.shard.empty() ? std::make_pair(std::size_t{0}, std::size_t{1}) : parse_shard(plan.shard);
  std::vector<RunPlan> mine;
  for (std::size_t k = index; k < all.size(); k += count) mine.push_back(std::move(all[k]));
  return mine;
}

}  // namespace cvattn::cli
