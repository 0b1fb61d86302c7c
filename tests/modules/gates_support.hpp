#pragma once
// Shared by the tests of the timm gate modules: fixture cases of tests/fixtures/gates and their
// `set` parameters (the cvattn run --set values the case was made with).
#include <string>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"

namespace cvattn::test {

inline std::vector<Fixture> gate_cases(const std::string& prefix) {
  return fixtures_in("gates", prefix);
}

// The case's --set value for key, or fallback.
inline std::string set_value(const Fixture& fx, const std::string& key,
                             const std::string& fallback) {
  const auto& s = fx.params().at("set");
  return s.contains(key) ? s.at(key).get<std::string>() : fallback;
}
inline bool set_bool(const Fixture& fx, const std::string& key, bool fallback) {
  return set_value(fx, key, fallback ? "true" : "false") == "true";
}
inline std::int64_t set_int(const Fixture& fx, const std::string& key, std::int64_t fallback) {
  return std::stoll(set_value(fx, key, std::to_string(fallback)));
}
// "5,7" -> (5, 7); "3" -> (3, 3).
inline Pair2 set_pair(const Fixture& fx, const std::string& key, Pair2 fallback) {
  const std::string v = set_value(fx, key, "");
  if (v.empty()) return fallback;
  const auto comma = v.find(',');
  if (comma == std::string::npos) return Pair2(std::stoll(v));
  return Pair2(std::stoll(v.substr(0, comma)), std::stoll(v.substr(comma + 1)));
}

// Every float parameter and buffer of m set to a deterministic pseudo-random value (running
// variances kept positive).
inline void randomise(Module& m, std::uint64_t seed) {
  StateDict filled;
  const StateDict current = m.state_dict();
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = random_tensor(e.value.shape(), seed++);
    if (e.key.size() >= 11 && e.key.compare(e.key.size() - 11, 11, "running_var") == 0) {
      for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = 1.0f + 0.5f * t[i];
    }
    filled.set(e.key, t);
  }
  m.load_state_dict(filled, Strict::no);
}

}  // namespace cvattn::test
