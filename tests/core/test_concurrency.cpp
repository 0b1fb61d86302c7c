// Thread-safety guarantees (docs/reliability.md): after build + load, a module and the stateless
// functions may be called from any number of threads at once. Named *Concurrency* so that the
// tsan preset's test filter picks them up.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "support/concurrency.hpp"
#include "support/random.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;

// A conv layer as the module tests build them: parameters registered, loaded, then const.
class ConvBlock : public UnaryModule {
 public:
  ConvBlock(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t groups)
      : groups_(groups) {
    weight_ = register_parameter("weight", {out, in / groups, k, k});
    bias_ = register_parameter("bias", {out});
  }
  std::string describe() const override { return "ConvBlock"; }
  Tensor forward(const Tensor& x) const override {
    return F::conv2d(x, weight_, bias_, F::Conv2dOptions().padding(1).groups(groups_));
  }

 private:
  std::int64_t groups_;
  Tensor weight_, bias_;
};

std::shared_ptr<ConvBlock> loaded_block(std::int64_t groups) {
  auto block = std::make_shared<ConvBlock>(8, 8, 3, groups);
  StateDict dict;
  dict.set("weight", test::random_tensor({8, 8 / groups, 3, 3}, 11));
  dict.set("bias", test::random_tensor({8}, 12));
  block->load_state_dict(dict);
  return block;
}

TEST(Concurrency, SharedModuleForward) {
  const auto block = loaded_block(1);
  const Tensor x = test::random_tensor({2, 8, 11, 9}, 1);
  test::expect_thread_safe([&] { return block->forward(x); });
}

TEST(Concurrency, SharedDepthwiseModuleForwardOnDifferentInputs) {
  const auto block = loaded_block(8);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back(test::random_tensor({1, 8, 7 + i, 5 + i}, 20 + i));
  test::expect_thread_safe([&] {
    std::vector<Tensor> out;
    for (const auto& x : inputs) out.push_back(block->forward(x));
    return out;
  });
}

TEST(Concurrency, Conv2dEveryPathOnSharedTensors) {
  const Tensor x = test::random_tensor({1, 4, 9, 8}, 2);
  const Tensor w1 = test::random_tensor({6, 4, 1, 1}, 3);
  const Tensor wd = test::random_tensor({4, 1, 3, 3}, 4);
  const Tensor w3 = test::random_tensor({6, 2, 3, 3}, 5);
  test::expect_thread_safe([&] {
    return std::vector<Tensor>{
        F::conv2d(x, w1), F::conv2d(x, wd, {}, F::Conv2dOptions().groups(4).padding(1)),
        F::conv2d(x, w3, {}, F::Conv2dOptions().groups(2).stride(2).dilation(2))};
  });
}

TEST(Concurrency, ParsersOnSharedBuffers) {
  std::string npy_bytes = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  npy_bytes.append(127 - npy_bytes.size(), ' ');
  npy_bytes += '\n';
  for (int i = 0; i < 6; ++i) {
    const float v = 0.5f * static_cast<float>(i);
    npy_bytes.append(reinterpret_cast<const char*>(&v), 4);
  }
  const std::string header = R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  std::string st(8, '\0');
  st[0] = static_cast<char>(header.size());
  st += header + std::string("\x00\x3c\x00\xc0", 4);
  test::expect_thread_safe([&] {
    return std::vector<Tensor>{io::parse_npy(npy_bytes.data(), npy_bytes.size()),
                               io::parse_safetensors(st.data(), st.size()).at("w")};
  });
}

TEST(Concurrency, ImageHelpers) {
  cv::Mat img(6, 5, CV_8UC3);
  cv::randu(img, 0, 255);
  const ImageOptions o = ImageOptions().scale(1.0 / 255).mean(cv::Scalar(1, 2, 3)).swap_rb(true);
  test::expect_thread_safe([&] {
    const Tensor t = from_image(img, o);
    cv::Mat back;
    to_image(t, 0, o).convertTo(back, CV_32F);
    return std::vector<Tensor>{t, Tensor(back).clone()};
  });
}

}  // namespace
}  // namespace cvattn
