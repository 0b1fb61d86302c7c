#include "cvattn/models/swin_transformer.hpp"

#include <sstream>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "cvattn/functional/window_attention.hpp"
#include "cvattn/modules/sequential.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

namespace F = cvattn::functional;

namespace {

std::string pair_text(Pair2 p) {
  return "(" + std::to_string(p.h) + ", " + std::to_string(p.w) + ")";
}

std::shared_ptr<LayerNorm> layer_norm(std::int64_t dim) {
  return std::make_shared<LayerNorm>(LayerNormOptions({dim}).eps(1e-5));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PatchEmbed

SwinPatchEmbed::SwinPatchEmbed(Pair2 img_size, std::int64_t patch_size, std::int64_t in_chans,
                               std::int64_t embed_dim)
    : img_size_(img_size), in_chans_(in_chans) {
  CVATTN_CHECK(patch_size >= 1 && img_size.h >= patch_size && img_size.w >= patch_size, ValueError,
               "PatchEmbed: img_size ", pair_text(img_size), " must be at least patch_size (",
               patch_size, ")");
  grid_ = Pair2(img_size.h / patch_size, img_size.w / patch_size);
  proj_ = register_module(
      "proj",
      std::make_shared<Conv2d>(Conv2dOptions(in_chans, embed_dim, patch_size).stride(patch_size)));
  norm_ = register_module("norm", layer_norm(embed_dim));
}

Tensor SwinPatchEmbed::forward(const Tensor& x) const {
  const char* where = "PatchEmbed::forward";
  check_defined(x, "x", where);
  CVATTN_CHECK(x.rank() == 4 && x.dim(0) >= 1 && x.dim(1) == in_chans_ && x.dim(2) == img_size_.h &&
                   x.dim(3) == img_size_.w,
               ShapeError, where, ": tensor 'x' expected [N >= 1, ", in_chans_, ", ", img_size_.h,
               ", ", img_size_.w, "] (timm's default strict img_size), got ", to_string(x.shape()));
  const Tensor tokens = F::flatten_spatial(proj_->forward(x));  // [N, gh*gw, D]: NHWC order
  return norm_->forward(tokens).reshape({x.dim(0), grid_.h, grid_.w, tokens.dim(2)});
}

// ---------------------------------------------------------------------------------------------
// WindowAttention

WindowAttention::WindowAttention(std::int64_t dim, std::int64_t num_heads, Pair2 window)
    : dim_(dim), heads_(num_heads), window_(window) {
  CVATTN_CHECK(dim >= 1 && num_heads >= 1 && dim % num_heads == 0, ValueError,
               "WindowAttention: num_heads (", num_heads, ") must divide dim (", dim, ")");
  CVATTN_CHECK(window.h >= 1 && window.w >= 1 && window.h <= 4096 && window.w <= 4096, ValueError,
               "WindowAttention: window ", pair_text(window), " must be in [1, 4096] per side");
  table_ = register_parameter("relative_position_bias_table",
                              {(2 * window.h - 1) * (2 * window.w - 1), num_heads});
  qkv_ = register_module("qkv", std::make_shared<Linear>(LinearOptions(dim, 3 * dim)));
  proj_ = register_module("proj", std::make_shared<Linear>(LinearOptions(dim, dim)));
  on_weights_loaded();
}

void WindowAttention::on_weights_loaded() { bias_ = F::relative_position_bias(table_, window_); }

Attended WindowAttention::attend(const Tensor& windows, const Tensor& bias, bool keep_maps) const {
  const char* where = "WindowAttention::forward";
  check_defined(windows, "windows", where);
  check_shape(windows, {kAny, window_.h * window_.w, dim_}, "windows", where);
  const Tensor qkv = qkv_->forward(windows);  // [B, A, 3 * dim]
  F::AttentionResult r =
      F::window_attention(qkv, heads_, bias, F::WindowAttentionOptions().need_weights(keep_maps));
  Attended out{proj_->forward(r.output), {}};
  if (keep_maps) out.maps.add(maps::kAttention, r.attn_weights);  // [B, heads, A, A]
  return out;
}

Attended WindowAttention::run(const Tensor& x, bool keep_maps) const {
  return attend(x, bias_, keep_maps);
}

std::string WindowAttention::describe() const {
  return "WindowAttention(dim=" + std::to_string(dim_) + ", num_heads=" + std::to_string(heads_) +
         ", window_size=" + pair_text(window_) + ")";
}

// ---------------------------------------------------------------------------------------------
// SwinTransformerBlock

SwinTransformerBlock::SwinTransformerBlock(const SwinBlockOptions& options) : options_(options) {
  const auto& o = options_;
  const Pair2 res = o.input_resolution(), target = o.window_size(), shift = o.shift_size();
  CVATTN_CHECK(res.h >= 1 && res.w >= 1, ValueError, "SwinTransformerBlock: input_resolution ",
               pair_text(res), " must be positive");
  CVATTN_CHECK(o.mlp_ratio() > 0.0, ValueError,
               "SwinTransformerBlock: mlp_ratio must be positive, got ", o.mlp_ratio());
  // timm's _calc_window_shift (always_partition False): an axis no longer than the window is
  // one window and is not shifted.
  window_ = Pair2(res.h <= target.h ? res.h : target.h, res.w <= target.w ? res.w : target.w);
  shift_ = Pair2(res.h <= window_.h ? 0 : shift.h, res.w <= window_.w ? 0 : shift.w);
  CVATTN_CHECK(shift_.h >= 0 && shift_.w >= 0 && shift_.h < window_.h && shift_.w < window_.w,
               ValueError, "SwinTransformerBlock: shift_size ", pair_text(shift),
               " must be non-negative and smaller than the window ", pair_text(window_));
  norm1_ = register_module("norm1", layer_norm(o.dim()));
  attn_ =
      register_module("attn", std::make_shared<WindowAttention>(o.dim(), o.num_heads(), window_));
  norm2_ = register_module("norm2", layer_norm(o.dim()));
  // timm: int(dim * mlp_ratio)
  const auto hidden = static_cast<std::int64_t>(static_cast<double>(o.dim()) * o.mlp_ratio());
  mlp_ = register_module("mlp", std::make_shared<VitMlp>(o.dim(), hidden));
  if (shift_.h > 0 || shift_.w > 0) mask_ = F::shifted_window_mask(res, window_, shift_);
  on_weights_loaded();
}

void SwinTransformerBlock::on_weights_loaded() {
  // Scores get bias + mask: [heads, A, A] + [nW, 1, A, A] -> [nW, heads, A, A], summed once.
  const Tensor& bias = attn_->relative_position_bias();
  if (!mask_.defined()) {
    bias_ = bias;
    return;
  }
  const std::int64_t a = window_.h * window_.w;
  bias_ = F::add(bias.reshape({1, bias.dim(0), a, a}), mask_.reshape({mask_.dim(0), 1, a, a}));
}

Attended SwinTransformerBlock::run(const Tensor& x, bool keep_maps) const {
  const char* where = "SwinTransformerBlock::forward";
  const Pair2 res = options_.input_resolution();
  check_defined(x, "x", where);
  check_shape(x, {kAny, res.h, res.w, options_.dim()}, "x", where);
  const Tensor windows = F::window_partition(norm1_->forward(x), window_, shift_);
  Attended a = attn_->attend(windows, bias_, keep_maps);
  const Tensor y =
      F::residual_add(x, F::window_reverse(a.output, res, window_, shift_), /*relu=*/false);
  Attended out{F::residual_add(y, mlp_->forward(norm2_->forward(y)), false), {}};
  if (keep_maps) detail::add_prefixed(out.maps, "attn", a.maps);
  return out;
}

std::string SwinTransformerBlock::describe() const {
  return "SwinTransformerBlock(dim=" + std::to_string(options_.dim()) +
         ", num_heads=" + std::to_string(options_.num_heads()) +
         ", input_resolution=" + pair_text(options_.input_resolution()) +
         ", window_size=" + pair_text(window_) + ", shift_size=" + pair_text(shift_) + ")";
}

// ---------------------------------------------------------------------------------------------
// PatchMerging, stage

PatchMerging::PatchMerging(std::int64_t dim, std::int64_t out_dim)
    : dim_(dim), out_dim_(out_dim == 0 ? 2 * dim : out_dim) {
  CVATTN_CHECK(dim >= 1 && out_dim_ >= 1, ValueError, "PatchMerging: dim (", dim, ") and out_dim (",
               out_dim_, ") must be positive");
  norm_ = register_module("norm", layer_norm(4 * dim));
  reduction_ = register_module(
      "reduction", std::make_shared<Linear>(LinearOptions(4 * dim, out_dim_).bias(false)));
}

Tensor PatchMerging::forward(const Tensor& x) const {
  check_defined(x, "x", "PatchMerging::forward");
  check_shape(x, {kAny, kAny, kAny, dim_}, "x", "PatchMerging::forward");
  return reduction_->forward(norm_->forward(F::merge_patches(x)));
}

std::string PatchMerging::describe() const {
  return "PatchMerging(dim=" + std::to_string(dim_) + ", out_dim=" + std::to_string(out_dim_) + ")";
}

SwinTransformerStage::SwinTransformerStage(std::int64_t dim, std::int64_t out_dim,
                                           Pair2 input_resolution, std::int64_t depth,
                                           bool downsample, std::int64_t num_heads,
                                           Pair2 window_size, double mlp_ratio) {
  CVATTN_CHECK(depth >= 1, ValueError, "SwinTransformerStage: depth must be >= 1, got ", depth);
  CVATTN_CHECK(downsample || dim == out_dim, ValueError, "SwinTransformerStage: dim (", dim,
               ") must equal out_dim (", out_dim, ") without downsample");
  output_resolution_ =
      downsample ? Pair2(input_resolution.h / 2, input_resolution.w / 2) : input_resolution;
  if (downsample) {
    downsample_ = register_module("downsample", std::make_shared<PatchMerging>(dim, out_dim));
  }
  blocks_ = register_module("blocks", std::make_shared<BlockList>());
  const Pair2 shift(window_size.h / 2, window_size.w / 2);
  for (std::int64_t i = 0; i < depth; ++i) {
    blocks_->push_back(std::make_shared<SwinTransformerBlock>(
        SwinBlockOptions(out_dim, num_heads, output_resolution_)
            .window_size(window_size)
            .shift_size(i % 2 == 0 ? Pair2(0) : shift)
            .mlp_ratio(mlp_ratio)));
  }
}

Attended SwinTransformerStage::run(const Tensor& x, bool keep_maps) const {
  const Tensor y = downsample_ ? downsample_->forward(x) : x;
  if (!keep_maps) return {blocks_->forward(y), {}};
  Attended b = blocks_->forward_with_maps(y);
  Attended out{b.output, {}};
  detail::add_prefixed(out.maps, "blocks", b.maps);
  return out;
}

// ---------------------------------------------------------------------------------------------
// SwinTransformer

SwinTransformer::SwinTransformer(const SwinTransformerOptions& options) : options_(options) {
  const auto& o = options_;
  const std::size_t stages = o.depths().size();
  CVATTN_CHECK(stages >= 1 && o.num_heads().size() == stages, ValueError,
               "SwinTransformerOptions: depths (", stages, " stages) and num_heads (",
               o.num_heads().size(), ") must have the same non-zero length");
  CVATTN_CHECK(o.embed_dim() >= 1 && o.num_classes() >= 1 && o.in_chans() >= 1 &&
                   o.mlp_ratio() > 0.0 && stages < 24,
               ValueError, "SwinTransformerOptions: embed_dim (", o.embed_dim(), "), num_classes (",
               o.num_classes(), "), in_chans (", o.in_chans(), ") and mlp_ratio (", o.mlp_ratio(),
               ") must be positive, stages fewer than 24");
  patch_embed_ = register_module(
      "patch_embed",
      std::make_shared<SwinPatchEmbed>(o.img_size(), o.patch_size(), o.in_chans(), o.embed_dim()));
  layers_ = register_module("layers", std::make_shared<BlockList>());
  // timm: stage i has embed_dim * 2^i channels; stages 0 and 1 see the patch grid, later
  // stages it halved once more each; every stage but the first starts with PatchMerging.
  const Pair2 grid = patch_embed_->grid_size();
  std::int64_t in_dim = o.embed_dim(), scale = 1;
  for (std::size_t i = 0; i < stages; ++i) {
    const std::int64_t out_dim = o.embed_dim() << i;
    auto stage = std::make_shared<SwinTransformerStage>(
        in_dim, out_dim, Pair2(grid.h / scale, grid.w / scale), o.depths()[i], i > 0,
        o.num_heads()[i], o.window_size(), o.mlp_ratio());
    layers_->push_back(stage);
    in_dim = out_dim;
    if (i > 0) scale *= 2;
  }
  num_features_ = in_dim;
  norm_ = register_module("norm", layer_norm(in_dim));
  auto head = register_module("head", std::make_shared<Sequential>());
  fc_ = head->push_back("fc", std::make_shared<Linear>(LinearOptions(in_dim, o.num_classes())));
}

NetworkOutput SwinTransformer::run(const Tensor& x, bool keep_maps) const {
  const Tensor tokens = patch_embed_->forward(x);  // validates x
  NetworkOutput out;
  Tensor y;
  if (keep_maps) {
    Attended a = layers_->forward_with_maps(tokens);
    y = a.output;
    detail::add_prefixed(out.maps, "layers", a.maps);
  } else {
    y = layers_->forward(tokens);
  }
  y = norm_->forward(y);                          // [N, h, w, C]
  out.feature_map = F::permute(y, {0, 3, 1, 2});  // [N, C, h, w]
  out.features = F::mean(y, {1, 2});              // the head's global average pool
  out.logits = fc_->forward(out.features);
  return out;
}

std::string SwinTransformer::describe() const {
  std::ostringstream s;
  s << "SwinTransformer(model_name=" << options_.model_name()
    << ", embed_dim=" << options_.embed_dim() << ", img_size=" << pair_text(options_.img_size())
    << ", window_size=" << pair_text(options_.window_size())
    << ", num_classes=" << options_.num_classes() << ")";
  return s.str();
}

}  // namespace cvattn::models
