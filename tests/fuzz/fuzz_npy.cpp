// libFuzzer harness: io::parse_npy on arbitrary bytes.
#include <cstring>

#include "cvattn/io/npy.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cvattn::fuzz::init_limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return cvattn::fuzz::guarded([&] {
    const cvattn::Tensor t = cvattn::io::parse_npy(data, size, "fuzz.npy");
    CVATTN_FUZZ_ASSERT(t.defined());
    CVATTN_FUZZ_ASSERT(t.rank() <= cvattn::Tensor::kMaxRank);
    std::int64_t n = 1;
    for (const auto d : t.shape()) n *= d;
    CVATTN_FUZZ_ASSERT(n == t.numel());
    // Touch every element so that ASan sees any short allocation.
    float sum = 0;
    for (std::int64_t i = 0; i < t.numel(); ++i) sum += t[i];
    (void)sum;
  });
}
