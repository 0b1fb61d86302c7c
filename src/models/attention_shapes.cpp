#include "cvattn/models/attention_shapes.hpp"

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/image.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/pooling.hpp"
#include "modules/detail/key_scope.hpp"

namespace cvattn {

namespace F = cvattn::functional;

const std::vector<std::string>& attention_shapes::class_names() {
  static const std::vector<std::string> names = {"stripes_0", "stripes_45", "stripes_90",
                                                 "stripes_135"};
  return names;
}

AttentionShapesNet::AttentionShapesNet() {
  stem_ = register_module("stem", std::make_shared<Sequential>());
  stem_->push_back(
      std::make_shared<Conv2d>(Conv2dOptions(3, 16, 3).stride(2).padding(1).bias(false)));
  stem_->push_back(std::make_shared<BatchNorm2d>(BatchNorm2dOptions(16)));
  stem_->push_back(std::make_shared<ReLU>());
  stem_->push_back(std::make_shared<Conv2d>(Conv2dOptions(16, 24, 3).padding(1).bias(false)));
  stem_->push_back(std::make_shared<BatchNorm2d>(BatchNorm2dOptions(24)));
  stem_->push_back(std::make_shared<ReLU>());
  stem_->push_back(std::make_shared<MaxPool2d>(F::MaxPool2dOptions(Pair2(2))));
  sk_ = register_module("sk", std::make_shared<SelectiveKernel>(SelectiveKernelOptions(24)));
  dcn_ = register_module(
      "dcn",
      std::make_shared<DeformConv2d>(
          DeformConv2dOptions(24, 32, Pair2(3)).padding(Pair2(1)).modulated(true).bias(true)));
  dcn_bn_ = register_module("dcn_bn", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(32)));
  cbam_ = register_module("cbam", std::make_shared<Cbam>(CbamOptions(32)));
  head_ = register_module("head", std::make_shared<Linear>(LinearOptions(32, 4)));
  AttentionShapesNet::on_weights_loaded();  // so an unloaded net runs too (all zero)
}

std::shared_ptr<AttentionShapesNet> AttentionShapesNet::from_state_dict(const StateDict& dict,
                                                                        const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  auto net = std::make_shared<AttentionShapesNet>();
  net->load_state_dict(dict);
  return net;
}

std::shared_ptr<AttentionShapesNet> AttentionShapesNet::load(const std::string& path) {
  return from_state_dict(io::load_safetensors(path));
}

Tensor AttentionShapesNet::input_from_image(const cv::Mat& bgr, cv::Size size) {
  CVATTN_CHECK(!bgr.empty(), ValueError, "AttentionShapesNet::input_from_image: empty image");
  CVATTN_CHECK(bgr.depth() == CV_8U, ValueError,
               "AttentionShapesNet::input_from_image: image must be 8-bit, got depth ",
               bgr.depth());
  cv::Mat three = bgr;
  if (bgr.channels() == 1) cv::cvtColor(bgr, three, cv::COLOR_GRAY2BGR);
  if (bgr.channels() == 4) cv::cvtColor(bgr, three, cv::COLOR_BGRA2BGR);
  CVATTN_CHECK(three.channels() == 3, ValueError,
               "AttentionShapesNet::input_from_image: image must have 1, 3 or 4 channels, got ",
               bgr.channels());
  // Area interpolation when shrinking photos: the model never saw aliasing.
  cv::Mat sized = three;
  if (!size.empty() && size != three.size()) {
    const bool shrink = size.width < three.cols || size.height < three.rows;
    cv::resize(three, sized, size, 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  }
  return from_image(sized, ImageOptions().scale(1.0 / 255).swap_rb(true));
}

void AttentionShapesNet::on_weights_loaded() {
  const StateDict sk = sk_->state_dict();
  std::tie(dilated_weight_, dilated_bias_) = F::fold_batch_norm(
      sk.at("paths.1.conv.weight"), Tensor(), sk.at("paths.1.bn.running_mean"),
      sk.at("paths.1.bn.running_var"), sk.at("paths.1.bn.weight"), sk.at("paths.1.bn.bias"));
}

Tensor AttentionShapesNet::sk_path_share(const Tensor& stem, const Attended& sk) const {
  // The dilated path again (SelectiveKernel does not return its branches): the second half of
  // the input channels (split_input), 3x3 with dilation 2, folded BN, ReLU.
  const std::int64_t n = stem.dim(0), half = stem.dim(1) / 2, h = stem.dim(2), w = stem.dim(3);
  const std::int64_t plane = h * w;
  Tensor second = Tensor::empty({n, half, h, w});
  for (std::int64_t i = 0; i < n; ++i) {
    std::copy_n(stem.data() + (i * 2 * half + half) * plane, half * plane,
                second.data() + i * half * plane);
  }
  const Tensor f1 = F::relu(
      F::conv2d(second, dilated_weight_, dilated_bias_, F::Conv2dOptions().padding(2).dilation(2)));
  const Tensor& a = sk.maps.at(maps::kAttention);  // [N, 2, C]
  const Tensor& y = sk.output;                     // sum_p a[p, c] f_p
  const std::int64_t c = y.dim(1);
  Tensor share = Tensor::empty({n, 1, h, w});
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < plane; ++k) {
      double part = 0, total = 0;
      for (std::int64_t ch = 0; ch < c; ++ch) {
        part += static_cast<double>(a[(i * 2 + 1) * c + ch]) * f1[(i * c + ch) * plane + k];
        total += y[(i * c + ch) * plane + k];
      }
      share[i * plane + k] =
          total > 0 ? static_cast<float>(std::clamp(part / total, 0.0, 1.0)) : 0.5f;
    }
  }
  return share;
}

Attended AttentionShapesNet::run(const Tensor& x, bool keep_maps) const {
  check_defined(x, "input", "AttentionShapesNet");
  check_shape(x, {kAny, 3, kAny, kAny}, "input", "AttentionShapesNet");
  CVATTN_CHECK(x.dim(0) >= 1 && x.dim(2) >= 4 && x.dim(3) >= 4, ShapeError,
               "AttentionShapesNet: tensor 'input' must be [N >= 1, 3, H >= 4, W >= 4], got [",
               x.dim(0), ", 3, ", x.dim(2), ", ", x.dim(3), "]");
  const Tensor stem = stem_->forward(x);
  Attended sk = sk_->forward_with_maps(stem);
  Attended dcn = dcn_->forward_with_maps(sk.output);
  Attended cbam = cbam_->forward_with_maps(F::relu(dcn_bn_->forward(dcn.output)));
  const std::int64_t n = x.dim(0);
  Attended r;
  r.output = head_->forward(F::global_avg_pool2d(cbam.output).reshape({n, 32}));
  if (!keep_maps) return r;
  r.maps.add(attention_shapes::kSkAttention, sk.maps.at(maps::kAttention));
  r.maps.add(attention_shapes::kSkPathShare, sk_path_share(stem, sk));
  r.maps.add(maps::kOffset, dcn.maps.at(maps::kOffset));
  r.maps.add(maps::kMask, dcn.maps.at(maps::kMask));
  r.maps.add(maps::kChannelAttention, cbam.maps.at(maps::kChannelAttention));
  r.maps.add(maps::kSpatialAttention, cbam.maps.at(maps::kSpatialAttention));
  r.maps.add(attention_shapes::kFeatures, cbam.output);
  r.maps.add(maps::kLogits, r.output);
  return r;
}

Attended AttentionShapesNet::forward_with_maps(const Tensor& x) const { return run(x, true); }

Tensor AttentionShapesNet::forward(const Tensor& x) const { return run(x, false).output; }

}  // namespace cvattn
