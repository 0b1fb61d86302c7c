#pragma once
// Reference data written by tests/fixtures/<area>.py (PyTorch): one folder per case with
// <name>.npy tensors, an optional weights.safetensors and params.json (the case's settings).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"

#ifndef CVATTN_FIXTURES_DIR
#error "CVATTN_FIXTURES_DIR must point at tests/fixtures"
#endif

namespace cvattn::test {

class Fixture {
 public:
  explicit Fixture(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::ifstream in(dir_ / "params.json");
    if (in) params_ = nlohmann::json::parse(in);
  }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] std::string name() const { return dir_.filename().string(); }
  [[nodiscard]] bool has(const std::string& tensor) const {
    return std::filesystem::exists(dir_ / (tensor + ".npy"));
  }
  [[nodiscard]] Tensor tensor(const std::string& name) const {
    return io::read_npy((dir_ / (name + ".npy")).string());
  }
  [[nodiscard]] std::string path(const std::string& file) const { return (dir_ / file).string(); }
  [[nodiscard]] const nlohmann::json& params() const { return params_; }
  // The case's weights.safetensors.
  [[nodiscard]] StateDict weights() const {
    return io::load_safetensors(path("weights.safetensors"));
  }

 private:
  std::filesystem::path dir_;
  nlohmann::json params_ = nlohmann::json::object();
};

inline std::filesystem::path fixtures_root() { return CVATTN_FIXTURES_DIR; }

inline Fixture fixture(const std::string& relative) { return Fixture(fixtures_root() / relative); }

// Every case folder under fixtures/<area>, sorted by name.
inline std::vector<Fixture> fixtures_in(const std::string& area) {
  std::vector<std::filesystem::path> dirs;
  const auto root = fixtures_root() / area;
  if (std::filesystem::is_directory(root)) {
    for (const auto& e : std::filesystem::directory_iterator(root)) {
      if (e.is_directory()) dirs.push_back(e.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Fixture> out;
  for (auto& d : dirs) out.emplace_back(d);
  return out;
}

// The case folders under fixtures/<area> whose name starts with `prefix`, sorted by name.
inline std::vector<Fixture> fixtures_in(const std::string& area, const std::string& prefix) {
  std::vector<Fixture> out;
  for (auto& fx : fixtures_in(area)) {
    if (fx.name().rfind(prefix, 0) == 0) out.push_back(fx);
  }
  return out;
}

// A params.json pair such as "stride": [2, 1].
inline Pair2 pair(const nlohmann::json& j) {
  return {j.at(0).get<std::int64_t>(), j.at(1).get<std::int64_t>()};
}

}  // namespace cvattn::test
