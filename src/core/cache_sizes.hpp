#pragma once
// The data cache sizes of the CPU the process runs on, as Linux reports them for cpu0 under
// /sys/devices/system/cpu/cpu0/cache; read once. Kernels size their blocks and choose streaming
// stores by them. Private to cvattn.
#include <cstdint>

namespace cvattn::detail {

// Bytes of the data or unified cache of `level` (1, 2 or 3) of one core; 0 when the system does
// not say.
[[nodiscard]] std::int64_t cache_bytes(int level);

// Parses a sysfs cache size ("32768K", "2M", "1048576") into bytes; 0 for anything else.
[[nodiscard]] std::int64_t parse_cache_size(const char* text);

}  // namespace cvattn::detail
