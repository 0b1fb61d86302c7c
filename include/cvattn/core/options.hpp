#pragma once
// CVATTN_ARG(T, name): a private field name_ with a chainable setter name(v) and a getter
// name(), so option structs read like keyword arguments: ConvOptions().stride(2).padding(1).
#define CVATTN_ARG(T, name)                                        \
 public:                                                           \
  auto& name(const T& new_##name) {                                \
    name##_ = new_##name;                                          \
    return *this;                                                  \
  }                                                                \
  [[nodiscard]] const T& name() const noexcept { return name##_; } \
                                                                   \
 private:                                                          \
  T name##_

#include <cstdint>

namespace cvattn {

// A (height, width) pair such as a stride or a kernel size; one integer means both, as in
// PyTorch's `stride=2`.
struct Pair2 {
  std::int64_t h = 0;
  std::int64_t w = 0;
  constexpr Pair2() = default;
  constexpr Pair2(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  constexpr Pair2(std::int64_t height, std::int64_t width) : h(height), w(width) {}
  friend constexpr bool operator==(Pair2 a, Pair2 b) { return a.h == b.h && a.w == b.w; }
  friend constexpr bool operator!=(Pair2 a, Pair2 b) { return !(a == b); }
};

}  // namespace cvattn
