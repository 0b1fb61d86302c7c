#include "cvattn/models/vision_transformer.hpp"

#include <sstream>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/normalization.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/tokens.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

namespace F = cvattn::functional;

// ---------------------------------------------------------------------------------------------
// PatchEmbed, Attention, Mlp, Block

PatchEmbed::PatchEmbed(std::int64_t img_size, std::int64_t patch_size, std::int64_t in_chans,
                       std::int64_t embed_dim)
    : img_size_(img_size), in_chans_(in_chans) {
  CVATTN_CHECK(patch_size >= 1 && img_size >= patch_size && img_size % patch_size == 0, ValueError,
               "PatchEmbed: img_size (", img_size, ") must be a positive multiple of patch_size (",
               patch_size, ")");
  grid_ = img_size / patch_size;
  proj_ = register_module(
      "proj",
      std::make_shared<Conv2d>(Conv2dOptions(in_chans, embed_dim, patch_size).stride(patch_size)));
}

Tensor PatchEmbed::forward(const Tensor& x) const {
  const char* where = "PatchEmbed::forward";
  check_defined(x, "x", where);
  CVATTN_CHECK(x.rank() == 4 && x.dim(0) >= 1 && x.dim(1) == in_chans_ && x.dim(2) == img_size_ &&
                   x.dim(3) == img_size_,
               ShapeError, where, ": tensor 'x' expected [N >= 1, ", in_chans_, ", ", img_size_,
               ", ", img_size_, "] (timm's default strict img_size), got ", to_string(x.shape()));
  return F::flatten_spatial(proj_->forward(x));  // [N, grid*grid, D]
}

VitAttention::VitAttention(std::int64_t dim, std::int64_t num_heads, bool qkv_bias)
    : dim_(dim), heads_(num_heads) {
  CVATTN_CHECK(dim >= 1 && num_heads >= 1 && dim % num_heads == 0, ValueError,
               "VitAttention: num_heads (", num_heads, ") must divide dim (", dim, ")");
  qkv_ =
      register_module("qkv", std::make_shared<Linear>(LinearOptions(dim, 3 * dim).bias(qkv_bias)));
  proj_ = register_module("proj", std::make_shared<Linear>(LinearOptions(dim, dim)));
  on_weights_loaded();
}

void VitAttention::on_weights_loaded() {
  // qkv's output columns are [q | k | v], each heads-major: its weight rows split into three
  // contiguous blocks (views sharing the loaded storage).
  const Tensor& w = qkv_->weight();
  q_weight_ = w.slice0(0, dim_);
  k_weight_ = w.slice0(dim_, 2 * dim_);
  v_weight_ = w.slice0(2 * dim_, 3 * dim_);
  const Tensor& b = qkv_->bias();
  if (b.defined()) {
    q_bias_ = b.slice0(0, dim_);
    k_bias_ = b.slice0(dim_, 2 * dim_);
    v_bias_ = b.slice0(2 * dim_, 3 * dim_);
  }
}

Attended VitAttention::run(const Tensor& x, bool keep_maps) const {
  check_defined(x, "x", "VitAttention::forward");
  check_shape(x, {kAny, kAny, dim_}, "x", "VitAttention::forward");
  const Tensor q = F::linear(x, q_weight_, q_bias_);
  const Tensor k = F::linear(x, k_weight_, k_bias_);
  const Tensor v = F::linear(x, v_weight_, v_bias_);
  // softmax(q k^T * head_dim^-0.5) v per head; the default scale is 1/sqrt(head_dim).
  F::AttentionResult r = F::scaled_dot_product_attention_heads(
      q, k, v, heads_, {}, F::SdpaOptions().need_weights(keep_maps));
  Attended out{proj_->forward(r.output), {}};
  if (keep_maps) out.maps.add(maps::kAttention, r.attn_weights);  // [N, heads, T, T]
  return out;
}

std::string VitAttention::describe() const {
  return "Attention(dim=" + std::to_string(dim_) + ", num_heads=" + std::to_string(heads_) + ")";
}

VitMlp::VitMlp(std::int64_t dim, std::int64_t hidden) {
  fc1_ = register_module("fc1", std::make_shared<Linear>(LinearOptions(dim, hidden)));
  fc2_ = register_module("fc2", std::make_shared<Linear>(LinearOptions(hidden, dim)));
}

Tensor VitMlp::forward(const Tensor& x) const {
  Tensor h = fc1_->forward(x);
  F::activation_(h, ActLayer::gelu);  // fc1's own output: in place
  return fc2_->forward(h);
}

VitBlock::VitBlock(std::int64_t dim, std::int64_t num_heads, double mlp_ratio, double eps) {
  CVATTN_CHECK(mlp_ratio > 0.0, ValueError, "VitBlock: mlp_ratio must be positive, got ",
               mlp_ratio);
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(LayerNormOptions({dim}).eps(eps)));
  attn_ = register_module("attn", std::make_shared<VitAttention>(dim, num_heads));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(LayerNormOptions({dim}).eps(eps)));
  // timm: int(dim * mlp_ratio)
  const auto hidden = static_cast<std::int64_t>(static_cast<double>(dim) * mlp_ratio);
  mlp_ = register_module("mlp", std::make_shared<VitMlp>(dim, hidden));
}

Attended VitBlock::run(const Tensor& x, bool keep_maps) const {
  Attended a = keep_maps ? attn_->forward_with_maps(norm1_->forward(x))
                         : Attended{attn_->forward(norm1_->forward(x)), {}};
  const Tensor y = F::residual_add(x, a.output, false);
  Attended out{F::residual_add(y, mlp_->forward(norm2_->forward(y)), false), {}};
  if (keep_maps) detail::add_prefixed(out.maps, "attn", a.maps);
  return out;
}

// ---------------------------------------------------------------------------------------------
// VisionTransformer

VisionTransformer::VisionTransformer(const VisionTransformerOptions& options) : options_(options) {
  const auto& o = options_;
  const std::int64_t d = o.embed_dim();
  CVATTN_CHECK(d >= 1 && o.depth() >= 1 && o.num_classes() >= 1 && o.in_chans() >= 1, ValueError,
               "VisionTransformerOptions: embed_dim (", d, "), depth (", o.depth(),
               "), num_classes (", o.num_classes(), ") and in_chans (", o.in_chans(),
               ") must be positive");
  // timm's state_dict order: cls_token, pos_embed, (dist_token), patch_embed, blocks, norm, head.
  cls_token_ = register_parameter("cls_token", {1, 1, d});
  patch_embed_ = std::make_shared<PatchEmbed>(o.img_size(), o.patch_size(), o.in_chans(), d);
  const Pair2 grid = patch_embed_->grid_size();
  pos_embed_ = register_parameter("pos_embed", {1, grid.h * grid.w + num_prefix_tokens(), d});
  if (o.distilled()) dist_token_ = register_parameter("dist_token", {1, 1, d});
  register_module("patch_embed", patch_embed_);
  blocks_ = register_module("blocks", std::make_shared<BlockList>());
  for (std::int64_t i = 0; i < o.depth(); ++i) {
    blocks_->push_back(std::make_shared<VitBlock>(d, o.num_heads(), o.mlp_ratio()));
  }
  norm_ = register_module("norm", std::make_shared<LayerNorm>(LayerNormOptions({d}).eps(1e-6)));
  head_ = register_module("head", std::make_shared<Linear>(LinearOptions(d, o.num_classes())));
  if (o.distilled()) {
    head_dist_ =
        register_module("head_dist", std::make_shared<Linear>(LinearOptions(d, o.num_classes())));
  }
}

NetworkOutput VisionTransformer::run(const Tensor& x, bool keep_maps) const {
  const Tensor patches = patch_embed_->forward(x);  // validates x
  std::vector<Tensor> prefix{cls_token_};
  if (options_.distilled()) prefix.push_back(dist_token_);
  const Tensor tokens = F::prepend_tokens(prefix, patches);  // [N, T, D]
  const std::int64_t n = tokens.dim(0), t = tokens.dim(1), d = tokens.dim(2);
  // + pos_embed [1, T, D], broadcast over N (viewed as [N, T, D, 1] + [1, T, D, 1]).
  const Tensor embedded =
      F::add_position_encoding(tokens.reshape({n, t, d, 1}), pos_embed_.reshape({1, t, d, 1}))
          .reshape({n, t, d});
  NetworkOutput out;
  Tensor y = embedded;
  if (keep_maps) {
    Attended b = blocks_->forward_with_maps(embedded);
    y = b.output;
    detail::add_prefixed(out.maps, "blocks", b.maps);
  } else {
    y = blocks_->forward(embedded);
  }
  y = norm_->forward(y);
  const Tensor cls = F::select_token(y, 0);
  if (options_.distilled()) {
    const Tensor dist = F::select_token(y, 1);
    out.features = F::mean_of_two(cls, dist);
    out.logits = F::mean_of_two(head_->forward(cls), head_dist_->forward(dist));
  } else {
    out.features = cls;
    out.logits = head_->forward(cls);
  }
  return out;
}

Tensor VisionTransformer::rollout(const NetworkOutput& out, functional::HeadFusion head_fusion,
                                  double discard_ratio) const {
  std::vector<Tensor> attentions;
  for (std::size_t i = 0; i < blocks_->size(); ++i) {
    const std::string path = "blocks." + std::to_string(i) + ".attn.attention";
    CVATTN_CHECK(out.maps.contains(path), ValueError, model_name(),
                 ": rollout needs the maps of run(x, true); '", path, "' is missing");
    attentions.push_back(out.maps.at(path));
  }
  return F::attention_rollout(attentions, F::AttentionRolloutOptions(patch_embed_->grid_size())
                                              .prefix_tokens(num_prefix_tokens())
                                              .head_fusion(head_fusion)
                                              .discard_ratio(discard_ratio));
}

std::string VisionTransformer::describe() const {
  std::ostringstream s;
  s << "VisionTransformer(model_name=" << options_.model_name()
    << ", embed_dim=" << options_.embed_dim() << ", depth=" << options_.depth()
    << ", num_heads=" << options_.num_heads() << ", num_classes=" << options_.num_classes()
    << (options_.distilled() ? ", distilled=True)" : ")");
  return s.str();
}

}  // namespace cvattn::models
