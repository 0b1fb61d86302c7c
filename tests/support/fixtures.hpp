#pragma once
// Reference data written by tests/fixtures/<area>.py (PyTorch): one folder per case with
// <name>.npy tensors, an optional weights.safetensors and params.json (the case's settings).
// What parses JSON or walks folders is compiled once, in fixtures.cpp (the cvattn_test_support
// library): instantiated in each of 70 test sources, JSON's parser alone took 0.6 s of each
// one's 5.5 s compile.
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

namespace cvattn::test {

class Fixture {
 public:
  // Reads dir/params.json when there is one.
  explicit Fixture(std::filesystem::path dir);
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

// tests/fixtures in the source tree.
[[nodiscard]] std::filesystem::path fixtures_root();

inline Fixture fixture(const std::string& relative) { return Fixture(fixtures_root() / relative); }

// Every case folder under fixtures/<area>, sorted by name.
[[nodiscard]] std::vector<Fixture> fixtures_in(const std::string& area);

// The case folders under fixtures/<area> whose name starts with `prefix`, sorted by name.
[[nodiscard]] std::vector<Fixture> fixtures_in(const std::string& area, const std::string& prefix);

// A params.json pair such as "stride": [2, 1].
inline Pair2 pair(const nlohmann::json& j) {
  return {j.at(0).get<std::int64_t>(), j.at(1).get<std::int64_t>()};
}

}  // namespace cvattn::test
