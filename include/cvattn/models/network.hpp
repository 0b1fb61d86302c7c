#pragma once
// Network: the common face of the whole timm networks (models::create): logits, the pooled
// pre-logits features, every attention map by its module path, and the class activation map.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/saliency.hpp"

namespace cvattn::models {

// Name of the features output (docs/cli.md "Whole networks").
inline constexpr const char* kFeatures = "features";
inline constexpr const char* kCam = "cam";

// A block whose forward also reports its attention maps, by path relative to the block
// ("se.attention", "attn.attention"); forward and forward_with_maps share one run().
class CVATTN_EXPORT MappedModule : public UnaryModule {
 public:
  [[nodiscard]] Tensor forward(const Tensor& x) const override { return run(x, false).output; }
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override { return run(x, true); }

 protected:
  [[nodiscard]] virtual Attended run(const Tensor& x, bool keep_maps) const = 0;
};

// nn.Sequential of blocks named "0", "1", ...: each block's maps come out prefixed by its index
// ("1.se.attention").
class CVATTN_EXPORT BlockList final : public MappedModule {
 public:
  // ValueError on a null block.
  void push_back(std::shared_ptr<MappedModule> block);
  [[nodiscard]] std::size_t size() const noexcept { return blocks_.size(); }
  [[nodiscard]] std::string describe() const override { return "Sequential"; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::vector<std::shared_ptr<MappedModule>> blocks_;
};

struct NetworkOutput {
  Tensor logits;       // [N, num_classes]
  Tensor features;     // [N, num_features]: the pooled pre-logits features (timm's pre_logits)
  Tensor feature_map;  // [N, num_features, h, w] before the global pooling (CNNs), else undefined
  AttentionMaps maps;  // by module path: "layer1.0.se.attention", "layer2.1.conv1.attention"
};

class CVATTN_EXPORT Network : public UnaryModule {
 public:
  // x [N, 3, H, W] -> logits [N, num_classes].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // Logits plus every attention map by module path.
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;
  // Everything at once; keep_maps = false skips the maps (logits and features stay).
  [[nodiscard]] virtual NetworkOutput run(const Tensor& x, bool keep_maps = true) const = 0;

  // True when the head is global average pooling + one linear layer (what a CAM needs).
  [[nodiscard]] bool has_class_activation_map() const { return cam_weight().defined(); }
  // docs/modules.md §18 on the output of run(): [N, h, w], for class_index or, when negative, each
  // sample's predicted class. ValueError for networks without such a head.
  [[nodiscard]] Tensor class_activation_map(const NetworkOutput& out,
                                            std::int64_t class_index = -1) const;

  // True for ViT-family networks (attention rollout over their blocks).
  [[nodiscard]] virtual bool has_rollout() const { return false; }
  // docs/modules.md §18 on the maps of run(x, true): [N, gh, gw]. ValueError for other networks.
  [[nodiscard]] virtual Tensor rollout(
      const NetworkOutput& out, functional::HeadFusion head_fusion = functional::HeadFusion::mean,
      double discard_ratio = 0.0) const;

  // timm's model name ("seresnet18").
  [[nodiscard]] virtual const std::string& model_name() const = 0;
  [[nodiscard]] virtual std::int64_t num_classes() const = 0;
  [[nodiscard]] virtual std::int64_t num_features() const = 0;

 protected:
  // The weight [num_classes, C] of the linear layer after global average pooling, for networks
  // whose head is just that (their CAM); undefined for the others.
  [[nodiscard]] virtual Tensor cam_weight() const { return {}; }
};

}  // namespace cvattn::models
