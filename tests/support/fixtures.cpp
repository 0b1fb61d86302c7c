#include "support/fixtures.hpp"

#include <algorithm>
#include <fstream>

#ifndef CVATTN_FIXTURES_DIR
#error "CVATTN_FIXTURES_DIR must point at tests/fixtures"
#endif

namespace cvattn::test {

Fixture::Fixture(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::ifstream in(dir_ / "params.json");
  if (in) params_ = nlohmann::json::parse(in);
}

std::filesystem::path fixtures_root() { return CVATTN_FIXTURES_DIR; }

std::vector<Fixture> fixtures_in(const std::string& area) {
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

std::vector<Fixture> fixtures_in(const std::string& area, const std::string& prefix) {
  std::vector<Fixture> out;
  for (auto& fx : fixtures_in(area)) {
    if (fx.name().rfind(prefix, 0) == 0) out.push_back(fx);
  }
  return out;
}

}  // namespace cvattn::test
