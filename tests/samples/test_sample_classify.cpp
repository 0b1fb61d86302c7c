// The classify sample on bundled photos with generated weights (tests/support/model_weights.hpp):
// its top-5 equals the library's own run on models::preprocess of the same image, it draws the
// CAM (ResNet) or the rollout (ViT) and every map, and bad models, weights and options are errors
// with exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "cvattn/io/safetensors.hpp"
#include "cvattn/models/data_config.hpp"
#include "cvattn/models/timm.hpp"
#include "support/model_weights.hpp"
#include "support/samples.hpp"

namespace cvattn::test {
namespace {

class SampleClassify : public SampleTest {
 protected:
  // Generated weights of model_name with `classes` outputs, as .safetensors in the scratch folder.
  std::string weights(const std::string& model_name, std::int64_t classes) {
    const auto skeleton = models::build(model_name, classes);
    const std::string file = (dir_ / (model_name + ".safetensors")).string();
    io::save_safetensors(file, generated_state_dict(*skeleton, 11).dict);
    return file;
  }
  // "<image>: 1. class k p, ..." as the library computes it for that bundled image.
  static std::string expected_line(const std::string& model_name, const std::string& file,
                                   const std::string& image) {
    const auto net = models::create(model_name, io::load_safetensors(file));
    const cv::Mat bgr =
        cv::imread(std::string(CVATTN_ASSETS_DIR) + "/images/" + image, cv::IMREAD_COLOR);
    const Tensor logits =
        net->run(models::preprocess(bgr, models::data_config(model_name)), false).logits;
    const auto k = static_cast<std::size_t>(logits.dim(1));
    std::vector<double> p(k);
    const double peak = *std::max_element(logits.data(), logits.data() + k);
    double sum = 0.0;
    for (std::size_t i = 0; i < k; ++i)
      sum += p[i] = std::exp(logits[static_cast<std::int64_t>(i)] - peak);
    std::vector<std::size_t> order(k);
    for (std::size_t i = 0; i < k; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return p[a] > p[b]; });
    std::string line = image + ":";
    for (std::size_t i = 0; i < std::min<std::size_t>(5, k); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %zu. class %zu %.4f", i ? "," : "", i + 1, order[i],
                    p[order[i]] / sum);
      line += buf;
    }
    return line;
  }
};

TEST_F(SampleClassify, ResNetTopFiveCamAndGates) {
  const std::string w = weights("seresnet18", 7);
  const SampleRun r =
      run("classify", "--model=seresnet18 --weights='" + w +
                          "' --input=images/chelsea.jpg,images/coffee.jpg " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* image : {"chelsea.jpg", "coffee.jpg"}) {
    const std::string line = expected_line("seresnet18", w, image);
    EXPECT_NE(r.out.find(line + "\n"), std::string::npos) << line << "\n" << r.out;
  }
  // input, CAM and 8 SE gates: 10 panels in 4 columns.
  expect_picture(out() / "chelsea_seresnet18.png", {4 * 224, 3 * (224 + 20)});
  expect_picture(out() / "coffee_seresnet18.png", {4 * 224, 3 * (224 + 20)});
  EXPECT_NE(r.out.find("wrote 2 PNGs"), std::string::npos) << r.out;
}

TEST_F(SampleClassify, VitRolloutClassNamesAndTopK) {
  const std::string w = weights("vit_tiny_patch16_224", 3);
  std::ofstream(dir_ / "names.txt") << "cat\ndog\ncoffee\n";
  const SampleRun r = run("classify", "--model=vit_tiny_patch16_224 --weights='" + w +
                                          "' --input=images/astronaut.jpg --topk=2 --fusion=max "
                                          "--discard=0.5 --classes='" +
                                          (dir_ / "names.txt").string() + "' " + out_arg());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("astronaut.jpg: 1. "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" 3. "), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find("cat") != std::string::npos || r.out.find("dog") != std::string::npos)
      << r.out;
  // input, rollout and 12 blocks' attention: 14 panels.
  expect_picture(out() / "astronaut_vit_tiny_patch16_224.png", {4 * 224, 4 * (224 + 20)});
}

TEST_F(SampleClassify, ErrorsNameTheProblem) {
  const std::string w = weights("seresnet18", 4);
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"--weights='" + w + "'", "--model and --weights are required"},
      {"--model=seresnet19 --weights='" + w + "'", "seresnet19"},
      {"--model=resnet18 --weights='" + w + "'", "unexpected"},
      {"--model=seresnet18 --weights=missing.safetensors", "missing.safetensors"},
      {"--model=seresnet18 --weights='" + w + "' --topk=0", "--topk"},
      {"--model=seresnet18 --weights='" + w + "' --fusion=median", "median"},
      {"--model=seresnet18 --weights='" + w + "' --classes=nofile.txt", "nofile.txt"},
      {"--model=seresnet18 --weights='" + w + "' --inptu=x", "--inptu"},
  };
  for (const Case& c : cases) {
    const SampleRun r = run("classify", c.args + " " + out_arg());
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(r.signalled) << c.args;
  }
}

}  // namespace
}  // namespace cvattn::test
