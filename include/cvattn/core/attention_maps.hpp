#pragma once
// Attention maps returned next to a module's output. Names are the cvattn tool's --out names.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

namespace maps {
inline constexpr const char* kAttention = "attention";
inline constexpr const char* kChannelAttention = "channel_attention";
inline constexpr const char* kSpatialAttention = "spatial_attention";
inline constexpr const char* kAttnWeights = "attn_weights";
inline constexpr const char* kTheta = "theta";
inline constexpr const char* kGrid = "grid";
inline constexpr const char* kOffset = "offset";
inline constexpr const char* kMask = "mask";
inline constexpr const char* kLogits = "logits";
}  // namespace maps

class CVATTN_EXPORT AttentionMaps {
 public:
  // ValueError naming `name` when a map of that name is already present.
  void add(const std::string& name, Tensor map);
  // Adds every map of `child` as "<prefix>.<name>" (as they are when prefix is empty), in order;
  // ValueError naming the first one already present.
  void merge(const std::string& prefix, const AttentionMaps& child);
  [[nodiscard]] bool contains(const std::string& name) const;
  // ValueError listing the names present when name is absent.
  [[nodiscard]] const Tensor& at(const std::string& name) const;
  [[nodiscard]] const std::vector<std::pair<std::string, Tensor>>& items() const noexcept {
    return items_;
  }
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }

 private:
  std::vector<std::pair<std::string, Tensor>> items_;
};

// A module's result: the output and, when asked for, its attention maps.
struct Attended {
  Tensor output;
  AttentionMaps maps;
};

}  // namespace cvattn
