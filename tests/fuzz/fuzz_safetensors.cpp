// libFuzzer harness: io::parse_safetensors on arbitrary bytes.
#include <set>
#include <string>

#include "cvattn/io/safetensors.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cvattn::fuzz::init_limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cvattn::fuzz::guarded([&] {
    const cvattn::StateDict dict = cvattn::io::parse_safetensors(data, size, "fuzz.safetensors");
    std::set<std::string> keys;
    std::int64_t total_bytes = 0;
    for (const auto& e : dict.entries()) {
      CVATTN_FUZZ_ASSERT(keys.insert(e.key).second);  // duplicated keys must be rejected
      CVATTN_FUZZ_ASSERT(e.key != "__metadata__");
      CVATTN_FUZZ_ASSERT(e.value.defined());
      std::int64_t n = 1;
      for (const auto d : e.value.shape()) n *= d;
      CVATTN_FUZZ_ASSERT(n == e.value.numel());
      float sum = 0;
      for (std::int64_t i = 0; i < e.value.numel(); ++i) sum += e.value[i];
      (void)sum;
      total_bytes += e.value.numel();  // at least one byte per element in the file
    }
    CVATTN_FUZZ_ASSERT(total_bytes <= static_cast<std::int64_t>(size));
  });
}
