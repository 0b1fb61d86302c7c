#pragma once
// What one `cvattn run OP` operation declares (its inputs, settings and outputs, as docs/cli.md
// tabulates them) and how it runs. Each op lives in ops/<op>.cpp; registry.cpp lists them.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::cli {

enum class SettingType { integer, pair, real, boolean, word, shape, int_list };

struct InputSpec {
  std::string name;
  std::string shape;  // documentation, e.g. "[N,C,H,W]"
  bool optional = false;
};

struct SettingSpec {
  std::string key;
  SettingType type;
  std::string default_value;  // empty: required (unless `optional`)
  std::string help;
  std::vector<std::string> words = {};  // allowed values of a word setting
  bool optional = false;                // may be absent with no default
};

struct OutputSpec {
  std::string name;
  std::string shape;
};

// Parsed, validated settings of one invocation.
class Settings {
 public:
  Settings(const std::string& op, const std::vector<SettingSpec>& specs,
           std::map<std::string, std::string> given);
  [[nodiscard]] bool has(const std::string& key) const;  // given explicitly or defaulted
  [[nodiscard]] bool given(const std::string& key) const;
  [[nodiscard]] std::int64_t integer(const std::string& key) const;
  [[nodiscard]] Pair2 pair(const std::string& key) const;
  [[nodiscard]] double real(const std::string& key) const;
  [[nodiscard]] bool boolean(const std::string& key) const;
  [[nodiscard]] std::string word(const std::string& key) const;
  [[nodiscard]] Shape shape(const std::string& key) const;
  [[nodiscard]] std::vector<std::int64_t> int_list(const std::string& key) const;

 private:
  const std::string& raw(const std::string& key) const;
  std::string op_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> given_;
};

struct Invocation {
  std::map<std::string, Tensor> inputs;
  std::optional<StateDict> weights;
  Settings settings;
  // The outputs that --out asks for: an op may skip computing a map no one asked for.
  std::set<std::string> wanted = {};
  // The tensor under name, or an undefined Tensor for an absent optional input.
  [[nodiscard]] Tensor input(const std::string& name) const;
  [[nodiscard]] bool wants(const std::string& name) const { return wanted.count(name) != 0; }
};

using Outputs = std::map<std::string, Tensor>;
// Prepared computation: everything loaded and validated, ready to run repeatedly.
using Computation = std::function<Outputs()>;

struct OpSpec {
  std::string name;
  std::string mirrors;
  std::vector<InputSpec> inputs;
  bool needs_weights = false;
  std::vector<SettingSpec> settings;
  std::vector<OutputSpec> outputs;
  std::function<Computation(const Invocation&)> prepare;
};

// The ops, in `cvattn list` order (registry.cpp).
const std::vector<OpSpec>& all_ops();

}  // namespace cvattn::cli
