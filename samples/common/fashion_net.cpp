#include "fashion_net.hpp"

#include <opencv2/imgproc.hpp>

namespace demo {

namespace F = cvattn::functional;
using cvattn::Tensor;

const std::vector<std::string>& fashion_classes() {
  static const std::vector<std::string> names = {"t-shirt/top", "trouser",   "pullover", "dress",
                                                 "coat",        "sandal",    "shirt",    "sneaker",
                                                 "bag",         "ankle boot"};
  return names;
}

namespace {

std::shared_ptr<cvattn::Sequential> conv_bn_relu(std::int64_t in, std::int64_t out) {
  auto s = std::make_shared<cvattn::Sequential>();
  s->push_back(
      std::make_shared<cvattn::Conv2d>(cvattn::Conv2dOptions(in, out, 3).padding(1).bias(false)));
  s->push_back(std::make_shared<cvattn::BatchNorm2d>(cvattn::BatchNorm2dOptions(out)));
  s->push_back(std::make_shared<cvattn::ReLU>());
  return s;
}

Tensor max_pool2(const Tensor& x) {
  return F::max_pool2d(x, F::MaxPool2dOptions(cvattn::Pair2(2)));
}

}  // namespace

FashionCnn::FashionCnn() {
  stem_ = register_module("stem", conv_bn_relu(1, 32));
  se_ = register_module(
      "se", std::make_shared<cvattn::SqueezeExcitation>(cvattn::SqueezeExcitationOptions(32)));
  sk_ = register_module("sk", std::make_shared<cvattn::SelectiveKernel>(
                                  cvattn::SelectiveKernelOptions(32).out_channels(64)));
  conv3_ = register_module("conv3", conv_bn_relu(64, 96));
  cbam_ = register_module("cbam", std::make_shared<cvattn::Cbam>(cvattn::CbamOptions(96)));
  head_ = register_module("head", std::make_shared<cvattn::Linear>(cvattn::LinearOptions(96, 10)));
}

std::shared_ptr<FashionCnn> FashionCnn::load(const std::filesystem::path& path) {
  auto net = std::make_shared<FashionCnn>();
  net->load_state_dict(cvattn::io::load_safetensors(path.string()));
  return net;
}

Tensor FashionCnn::input_from_image(const cv::Mat& image) {
  cv::Mat gray = image;
  if (image.channels() == 3) cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);
  if (image.channels() == 4) cv::cvtColor(image, gray, cv::COLOR_BGRA2GRAY);
  if (gray.size() != cv::Size(28, 28)) {
    cv::resize(gray, gray, {28, 28}, 0, 0,
               gray.cols > 28 || gray.rows > 28 ? cv::INTER_AREA : cv::INTER_LINEAR);
  }
  return cvattn::from_image(gray, cvattn::ImageOptions().scale(1.0 / 255));
}

cvattn::Attended FashionCnn::run(const Tensor& x, bool keep_maps) const {
  const cvattn::Attended se = se_->forward_with_maps(stem_->forward(x));
  const cvattn::Attended sk = sk_->forward_with_maps(max_pool2(se.output));
  const cvattn::Attended cbam = cbam_->forward_with_maps(conv3_->forward(max_pool2(sk.output)));
  const Tensor& f = cbam.output;  // [N, 96, h, w]
  const std::int64_t n = f.dim(0), c = f.dim(1), plane = f.dim(2) * f.dim(3);
  cvattn::Attended r;
  r.output = head_->forward(F::global_avg_pool2d(f).reshape({n, c}));
  if (!keep_maps) return r;
  r.maps.add("se", se.maps.at(cvattn::maps::kAttention).reshape({n, 32}));
  r.maps.add("sk", sk.maps.at(cvattn::maps::kAttention));
  r.maps.add(cvattn::maps::kChannelAttention, cbam.maps.at(cvattn::maps::kChannelAttention));
  r.maps.add(cvattn::maps::kSpatialAttention, cbam.maps.at(cvattn::maps::kSpatialAttention));
  r.maps.add("features", f);
  // CAM: the head applied at every cell, [N, 10, h, w].
  const cvattn::StateDict head = head_->state_dict();
  const Tensor& w = head.at("weight");
  const Tensor& b = head.at("bias");
  const std::int64_t k = w.dim(0);
  Tensor cam = Tensor::empty({n, k, f.dim(2), f.dim(3)});
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < k; ++j) {
      float* out = cam.data() + (i * k + j) * plane;
      for (std::int64_t p = 0; p < plane; ++p) out[p] = b[j];
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const float wj = w[j * c + ch];
        const float* in = f.data() + (i * c + ch) * plane;
        for (std::int64_t p = 0; p < plane; ++p) out[p] += wj * in[p];
      }
    }
  }
  r.maps.add("cam", cam);
  r.maps.add(cvattn::maps::kLogits, r.output);
  return r;
}

Tensor FashionCnn::forward(const Tensor& x) const { return run(x, false).output; }

cvattn::Attended FashionCnn::forward_with_maps(const Tensor& x) const { return run(x, true); }

}  // namespace demo
