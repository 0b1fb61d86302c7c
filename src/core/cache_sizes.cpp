#include "core/cache_sizes.hpp"

#include <array>
#include <fstream>
#include <string>

namespace cvattn::detail {
namespace {

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return {};
  return text;
}

// Sizes by level from cpu0's cache/index* entries (index0..index7; the index order is not the
// level order on every system, and level 1 lists an instruction cache too).
std::array<std::int64_t, 4> read_sizes() {
  std::array<std::int64_t, 4> sizes{};
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_word(dir + "level");
    const std::string type = read_word(dir + "type");
    if (level.size() != 1 || level[0] < '1' || level[0] > '3') continue;
    if (type != "Data" && type != "Unified") continue;
    sizes[static_cast<std::size_t>(level[0] - '0')] =
        parse_cache_size(read_word(dir + "size").c_str());
  }
  return sizes;
}

}  // namespace

std::int64_t parse_cache_size(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return 0;
  std::int64_t value = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (value >= (std::int64_t{1} << 40)) return 0;
    value = value * 10 + (*p - '0');
  }
  std::int64_t unit = 1;
  if (*p == 'K') unit = std::int64_t{1} << 10;
  if (*p == 'M') unit = std::int64_t{1} << 20;
  if (*p == 'G') unit = std::int64_t{1} << 30;
  if (unit > 1) ++p;
  return *p == '\0' ? value * unit : 0;
}

std::int64_t cache_bytes(int level) {
  static const std::array<std::int64_t, 4> sizes = read_sizes();
  return level >= 1 && level <= 3 ? sizes[static_cast<std::size_t>(level)] : 0;
}

}  // namespace cvattn::detail
