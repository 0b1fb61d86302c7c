#include "cvattn/modules/gather_excite.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/pooling.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {
namespace {

// int(math.log2(extent)) for extent >= 1.
std::int64_t floor_log2(std::int64_t v) {
  std::int64_t n = 0;
  while (v >= 2) {
    v /= 2;
    ++n;
  }
  return n;
}

}  // namespace

GatherExciteOptions GatherExciteOptions::from_state_dict(const StateDict& dict,
                                                         const std::string& prefix) {
  const char* where = "GatherExciteOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  GatherExciteOptions o;
  o.use_mlp(d.has_prefix("mlp"));
  if (o.use_mlp()) {
    const Shape& w1 = detail::require_conv1x1(d, "mlp.fc1.weight", where);
    o.channels(w1[1]).rd_channels(w1[0]);
  }
  o.extra_params(d.has_prefix("gather"));
  if (o.extra_params()) {
    const Shape& w = detail::require_shape(d, "gather.conv1.weight", {kAny, 1, kAny, kAny}, where);
    CVATTN_CHECK(o.channels() == 0 || o.channels() == w[0], ValueError, where,
                 ": 'gather.conv1.weight' ", to_string(w), " disagrees with 'mlp.fc1.weight' (",
                 o.channels(), " channels)");
    o.channels(w[0]).norm(d.has_prefix("gather.norm1"));
    const bool one_conv = !d.contains("gather.conv2.weight");
    if (one_conv && !(w[2] == 3 && w[3] == 3)) o.feat_size(Pair2(w[2], w[3]));
  }
  return o;
}

GatherExcite::GatherExcite(const GatherExciteOptions& options) : options_(options) {
  const char* who = "GatherExciteOptions";
  const std::int64_t c = options_.channels(), e = options_.extent();
  CVATTN_CHECK(c >= 0, ValueError, who, ": channels must be >= 0 (0: any), got ", c);
  CVATTN_CHECK(e >= 0 && e % 2 == 0, ValueError, who,
               ": extent must be 0 (global) or a positive even number, as timm asserts, got ", e);
  CVATTN_CHECK(c >= 1 || (!options_.extra_params() && !options_.use_mlp()), ValueError, who,
               ": extra_params and use_mlp need channels");
  if (options_.extra_params()) {
    auto gather = register_module("gather", std::make_shared<detail::ModuleGroup>("Sequential"));
    std::int64_t num_conv = 1;
    Pair2 kernel(3), stride(2);
    if (e == 0) {
      const Pair2 fs = options_.feat_size();
      CVATTN_CHECK(fs.h >= 1 && fs.w >= 1, ValueError, who,
                   ": feat_size must be given for extent 0 with extra_params (spatial feature "
                   "size for the global gather conv), got (",
                   fs.h, ", ", fs.w, ")");
      kernel = fs;
      stride = Pair2(1);
    } else {
      num_conv = floor_log2(e);
    }
    // timm's padding '': ((stride - 1) + (k - 1)) // 2 per axis.
    const Pair2 pad(((stride.h - 1) + (kernel.h - 1)) / 2, ((stride.w - 1) + (kernel.w - 1)) / 2);
    for (std::int64_t i = 1; i <= num_conv; ++i) {
      convs_.push_back(gather->add(
          "conv" + std::to_string(i),
          std::make_shared<Conv2d>(
              Conv2dOptions(c, c, kernel).stride(stride).padding(pad).groups(c).bias(false))));
      if (options_.norm()) {
        norms_.push_back(gather->add("norm" + std::to_string(i),
                                     std::make_shared<BatchNorm2d>(BatchNorm2dOptions(c))));
      }
    }
  }
  if (options_.use_mlp()) {
    rd_ = options_.rd_channels() > 0 ? options_.rd_channels()
                                     : make_divisible(static_cast<double>(c) / 16.0, 1, 0, 0.0);
    auto mlp = register_module("mlp", std::make_shared<detail::ModuleGroup>("ConvMlp"));
    fc1_ = mlp->add("fc1", std::make_shared<Conv2d>(Conv2dOptions(c, rd_, 1)));
    fc2_ = mlp->add("fc2", std::make_shared<Conv2d>(Conv2dOptions(rd_, c, 1)));
  }
}

std::string GatherExcite::describe() const {
  std::ostringstream out;
  out << "GatherExcite(channels=" << options_.channels() << ", extent=" << options_.extent()
      << ", extra_params=" << (options_.extra_params() ? "true" : "false")
      << ", use_mlp=" << (options_.use_mlp() ? "true" : "false");
  if (options_.use_mlp()) out << ", rd_channels=" << rd_;
  out << ", add_maxpool=" << (options_.add_maxpool() ? "true" : "false")
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor GatherExcite::forward(const Tensor& x) const { return run(x, false).output; }

Attended GatherExcite::forward_with_maps(const Tensor& x) const { return run(x, true); }

Tensor GatherExcite::gather(const Tensor& x) const {
  const Tensor::Nchw s = x.nchw("x");
  if (options_.extra_params()) {
    Tensor t = x;
    for (std::size_t i = 0; i < convs_.size(); ++i) {
      t = convs_[i]->forward(t);
      if (options_.norm()) t = detail::maybe_batch_norm(norms_[i], t);
      if (i + 1 != convs_.size()) t = F::relu(t);
    }
    return t;
  }
  const std::int64_t e = options_.extent();
  if (e == 0) {
    return F::channel_pool(x, options_.add_maxpool()).reshape({s.n, s.c, 1, 1});
  }
  const std::int64_t k = 2 * e - 1;
  Tensor t =
      F::avg_pool2d(x, F::AvgPool2dOptions(k).stride(e).padding(k / 2).count_include_pad(false));
  if (options_.add_maxpool()) {
    const Tensor m = F::max_pool2d(x, F::MaxPool2dOptions(k).stride(e).padding(k / 2));
    for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = 0.5f * t[i] + 0.5f * m[i];
  }
  return t;
}

Attended GatherExcite::run(const Tensor& x, bool keep_maps) const {
  const char* where = "GatherExcite::forward";
  const std::int64_t want = options_.channels() == 0 ? kAny : options_.channels();
  check_shape(x, {kAny, want, kAny, kAny}, "x", where);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'x' expected H, W >= 1 (the gather pools over them), got ",
               to_string(x.shape()));
  Tensor t = gather(x);  // [N, C, h, w]
  if (options_.use_mlp()) t = fc2_->forward(F::relu(fc1_->forward(t)));
  const Tensor g = F::gate(t, options_.gate_layer());
  Attended out;
  if (g.dim(2) == 1 && g.dim(3) == 1) {
    out.output = F::scale_channels(x, g);
    if (keep_maps) out.maps.add(maps::kAttention, F::upsample_nearest(g, Pair2(s.h, s.w)));
  } else if (keep_maps) {
    const Tensor up = F::upsample_nearest(g, Pair2(s.h, s.w));  // [N, C, H, W]
    out.output = F::multiply(x, up);
    out.maps.add(maps::kAttention, up);
  } else {
    out.output = F::scale_nearest(x, g);  // the same products, the gate never upsampled
  }
  return out;
}

}  // namespace cvattn
