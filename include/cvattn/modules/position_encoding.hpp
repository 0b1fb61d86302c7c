#pragma once
// LearnedPositionEncoding: a learned absolute position table added to a feature map,
//   y = x + pos_embed      pos_embed [1, C, H, W] broadcast over the batch
// (the nn.Parameter of ViT/DETR-style learned embeddings, kept in NCHW). state_dict key:
// `pos_embed` [1, C, H, W]. The fixed DETR sine encoding needs no weights:
// functional::position_encoding_sine.
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT LearnedPositionEncodingOptions {
 public:
  LearnedPositionEncodingOptions(std::int64_t channels, std::int64_t height, std::int64_t width)
      : channels_(channels), height_(height), width_(width) {}
  // C, H, W from pos_embed [1, C, H, W]; ValueError when it is missing or of another rank.
  [[nodiscard]] static LearnedPositionEncodingOptions from_state_dict(
      const StateDict& dict, const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, height);
  CVATTN_ARG(std::int64_t, width);
};

class CVATTN_EXPORT LearnedPositionEncoding final : public UnaryModule {
 public:
  // The table starts at zero. ValueError unless C, H, W >= 1 (and C*H*W fits the size cap).
  explicit LearnedPositionEncoding(const LearnedPositionEncodingOptions& options);

  // x [N, C, H, W] -> x + pos_embed. ShapeError when x's C, H, W differ from the table's.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const Tensor& pos_embed() const noexcept { return pos_embed_; }

 private:
  LearnedPositionEncodingOptions options_;
  Tensor pos_embed_;
};

}  // namespace cvattn
