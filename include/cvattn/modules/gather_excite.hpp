#pragma once
// GatherExcite: timm's GatherExcite (layers/gather_excite.py), GENet's gather-excite block
// (docs/gates.md). A gather step summarises each channel over a neighbourhood of `extent`
// (0: the whole image), an optional MLP excites it, and the gate, brought back to H x W by
// nearest-neighbour upsampling, rescales the input:
//
//   extra_params = false, extent = 0:  t = mean_hw(x)            (add_maxpool: 0.5 mean + 0.5 amax)
//   extra_params = false, extent = e:  t = avg_pool(x, 2e-1, stride e, pad e-1, no pad count)
//                                          (add_maxpool: 0.5 t + 0.5 max_pool(x, same window))
//   extra_params = true,  extent = 0:  t = bn(dwconv_{feat_size}(x))   stride 1, pad (k-1)/2
//   extra_params = true,  extent = e:  t = log2(e) x [dwconv3x3 stride 2, pad 1, bn], ReLU
//                                          between them
//   use_mlp: t = fc2(ReLU(fc1(t)))      1x1 convs with biases, C -> R -> C
//   g = gate(nearest(t, H x W)),  y = x * g      map "attention" [N, C, H, W]
//
// timm at commit aa4b5850 passes `*dd` where `**dd` is meant, so its GatherExcite cannot be
// built with extra_params or an MLP; cvattn follows the class as its author meant it (the
// fixtures mend that slip locally).
// state_dict keys: gather.conv{i}.weight [C, 1, kh, kw], gather.norm{i}.{weight, bias,
// running_mean, running_var, num_batches_tracked} [C] (norm only), mlp.fc1.weight [R, C, 1, 1],
// mlp.fc1.bias [R], mlp.fc2.weight [C, R, 1, 1], mlp.fc2.bias [C] (use_mlp only).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT GatherExciteOptions {
 public:
  // channels 0: any C (only without extra params and MLP, where nothing is sized by C).
  explicit GatherExciteOptions(std::int64_t channels = 0) : channels_(channels) {}

  // From the keys under prefix: extra_params (gather.*), its norm (gather.norm1.*), use_mlp and
  // R (mlp.fc1.weight), C (mlp.fc1.weight or gather.conv1.weight), and, with one gather conv
  // of a kernel other than 3x3, feat_size = that kernel (extent 0). extent, add_maxpool and
  // gate_layer leave no sure trace in the weights and keep their defaults: set extent.
  // ValueError naming the key on a malformed tensor.
  [[nodiscard]] static GatherExciteOptions from_state_dict(const StateDict& dict,
                                                           const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(Pair2, feat_size) = Pair2(0);  // (0, 0): timm's None
  CVATTN_ARG(bool, extra_params) = false;
  CVATTN_ARG(std::int64_t, extent) = 0;
  CVATTN_ARG(bool, use_mlp) = true;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: make_divisible(C / 16, 1, round_limit 0)
  CVATTN_ARG(bool, add_maxpool) = false;
  CVATTN_ARG(bool, norm) = true;  // timm's norm_layer=nn.BatchNorm2d (extra params only)
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
};

class CVATTN_EXPORT GatherExcite final : public UnaryModule {
 public:
  // ValueError on invalid options: extent odd or negative, extra_params or use_mlp without
  // channels, extra_params with extent 0 and no feat_size.
  explicit GatherExcite(const GatherExciteOptions& options);

  // x [N, C, H, W], H, W >= 1 -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, C, H, W] (the gate applied to the input).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const GatherExciteOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;
  [[nodiscard]] Tensor gather(const Tensor& x) const;

  GatherExciteOptions options_;
  std::int64_t rd_ = 0;
  std::vector<std::shared_ptr<Conv2d>> convs_;
  std::vector<std::shared_ptr<BatchNorm2d>> norms_;
  std::shared_ptr<Conv2d> fc1_, fc2_;
};

}  // namespace cvattn
