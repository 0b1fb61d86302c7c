// The trained demo assets (tools/train/ -> assets/): files load with cvattn's readers, carry the
// keys and shapes their model cards promise, and the STN check pair is reproduced from the
// weights by a naive float64 re-implementation of the tutorial network (docs/modules.md section 9),
// independent of cvattn's kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"

#ifndef CVATTN_ASSETS_DIR
#error "CVATTN_ASSETS_DIR must point at assets/"
#endif

namespace cvattn {
namespace {

const std::filesystem::path kAssets = CVATTN_ASSETS_DIR;

void expect_keys(const StateDict& dict, const std::map<std::string, Shape>& expected) {
  EXPECT_EQ(dict.size(), expected.size());
  for (const auto& [key, shape] : expected) {
    ASSERT_TRUE(dict.contains(key)) << key;
    EXPECT_EQ(dict.at(key).shape(), shape) << key;
    EXPECT_TRUE(dict.at(key).all_finite()) << key;
  }
}

// ---- naive tutorial Net in double precision ---------------------------------------------------

struct Map {  // [C, H, W]
  int c = 0, h = 0, w = 0;
  std::vector<double> v;
  double& at(int ci, int y, int x) { return v[(static_cast<std::size_t>(ci) * h + y) * w + x]; }
  double at(int ci, int y, int x) const {
    return v[(static_cast<std::size_t>(ci) * h + y) * w + x];
  }
};

// Conv2d with zero padding; bias may be undefined.
Map conv(const Map& in, const Tensor& weight, const Tensor& bias, int stride = 1, int pad = 0,
         int dil = 1) {
  const int o = static_cast<int>(weight.dim(0)), k = static_cast<int>(weight.dim(2));
  Map out{o,
          (in.h + 2 * pad - dil * (k - 1) - 1) / stride + 1,
          (in.w + 2 * pad - dil * (k - 1) - 1) / stride + 1,
          {}};
  out.v.assign(static_cast<std::size_t>(o) * out.h * out.w, 0.0);
  for (int oc = 0; oc < o; ++oc)
    for (int y = 0; y < out.h; ++y)
      for (int x = 0; x < out.w; ++x) {
        double s = bias.defined() ? bias[oc] : 0.0;
        for (int ic = 0; ic < in.c; ++ic)
          for (int u = 0; u < k; ++u)
            for (int v = 0; v < k; ++v) {
              const int yy = y * stride - pad + u * dil, xx = x * stride - pad + v * dil;
              if (yy < 0 || xx < 0 || yy >= in.h || xx >= in.w) continue;
              s += weight.at(oc, ic, u, v) * in.at(ic, yy, xx);
            }
        out.at(oc, y, x) = s;
      }
  return out;
}

Map pool_relu(const Map& in) {  // max_pool2d(2) then ReLU
  Map out{in.c, in.h / 2, in.w / 2, {}};
  out.v.resize(static_cast<std::size_t>(out.c) * out.h * out.w);
  for (int c = 0; c < in.c; ++c)
    for (int y = 0; y < out.h; ++y)
      for (int x = 0; x < out.w; ++x) {
        const double m =
            std::max(std::max(in.at(c, 2 * y, 2 * x), in.at(c, 2 * y, 2 * x + 1)),
                     std::max(in.at(c, 2 * y + 1, 2 * x), in.at(c, 2 * y + 1, 2 * x + 1)));
        out.at(c, y, x) = std::max(m, 0.0);
      }
  return out;
}

std::vector<double> linear(const std::vector<double>& x, const Tensor& w, const Tensor& b,
                           bool relu) {
  const auto o = static_cast<std::size_t>(w.dim(0)), n = static_cast<std::size_t>(w.dim(1));
  std::vector<double> y(o);
  for (std::size_t i = 0; i < o; ++i) {
    double s = b[static_cast<std::int64_t>(i)];
    for (std::size_t j = 0; j < n; ++j) s += w[static_cast<std::int64_t>(i * n + j)] * x[j];
    y[i] = relu ? std::max(s, 0.0) : s;
  }
  return y;
}

// affine_grid + grid_sample (bilinear, zeros, align_corners=False) on one channel.
Map warp(const Map& in, const std::vector<double>& theta) {
  Map out{1, in.h, in.w, std::vector<double>(static_cast<std::size_t>(in.h) * in.w)};
  for (int y = 0; y < in.h; ++y)
    for (int x = 0; x < in.w; ++x) {
      const double bx = (2.0 * x + 1) / in.w - 1, by = (2.0 * y + 1) / in.h - 1;
      const double gx = theta[0] * bx + theta[1] * by + theta[2];
      const double gy = theta[3] * bx + theta[4] * by + theta[5];
      const double ix = ((gx + 1) * in.w - 1) / 2, iy = ((gy + 1) * in.h - 1) / 2;
      const int x0 = static_cast<int>(std::floor(ix)), y0 = static_cast<int>(std::floor(iy));
      double s = 0;
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          const int xx = x0 + dx, yy = y0 + dy;
          if (xx < 0 || yy < 0 || xx >= in.w || yy >= in.h) continue;
          s += (dx ? ix - x0 : 1 - (ix - x0)) * (dy ? iy - y0 : 1 - (iy - y0)) * in.at(0, yy, xx);
        }
      out.at(0, y, x) = s;
    }
  return out;
}

std::vector<double> flatten(const Map& m) { return m.v; }

Map batch_norm(Map m, const StateDict& w, const std::string& prefix) {
  for (int c = 0; c < m.c; ++c) {
    const double scale = w.at(prefix + ".weight")[c] /
                         std::sqrt(static_cast<double>(w.at(prefix + ".running_var")[c]) + 1e-5);
    const double shift = w.at(prefix + ".bias")[c] - w.at(prefix + ".running_mean")[c] * scale;
    for (int i = 0; i < m.h * m.w; ++i)
      m.v[static_cast<std::size_t>(c * m.h * m.w + i)] =
          m.v[static_cast<std::size_t>(c * m.h * m.w + i)] * scale + shift;
  }
  return m;
}

Map relu(Map m) {
  for (double& v : m.v) v = std::max(v, 0.0);
  return m;
}

Map max_pool2(const Map& in) {
  Map out{in.c, in.h / 2, in.w / 2, {}};
  out.v.resize(static_cast<std::size_t>(out.c) * out.h * out.w);
  for (int c = 0; c < in.c; ++c)
    for (int y = 0; y < out.h; ++y)
      for (int x = 0; x < out.w; ++x)
        out.at(c, y, x) =
            std::max(std::max(in.at(c, 2 * y, 2 * x), in.at(c, 2 * y, 2 * x + 1)),
                     std::max(in.at(c, 2 * y + 1, 2 * x), in.at(c, 2 * y + 1, 2 * x + 1)));
  return out;
}

Map channels(const Map& in, int begin, int end) {
  Map out{end - begin, in.h, in.w, {}};
  out.v.assign(in.v.begin() + static_cast<std::ptrdiff_t>(begin) * in.h * in.w,
               in.v.begin() + static_cast<std::ptrdiff_t>(end) * in.h * in.w);
  return out;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

struct StnResult {
  std::vector<double> theta, logits;
};

StnResult stn_forward(const StateDict& w, const Map& x) {
  Map l = pool_relu(conv(x, w.at("localization.0.weight"), w.at("localization.0.bias")));
  l = pool_relu(conv(l, w.at("localization.3.weight"), w.at("localization.3.bias")));
  StnResult r;
  r.theta = linear(linear(flatten(l), w.at("fc_loc.0.weight"), w.at("fc_loc.0.bias"), true),
                   w.at("fc_loc.2.weight"), w.at("fc_loc.2.bias"), false);
  Map u = warp(x, r.theta);
  u = pool_relu(conv(u, w.at("conv1.weight"), w.at("conv1.bias")));
  u = pool_relu(conv(u, w.at("conv2.weight"), w.at("conv2.bias")));
  const std::vector<double> h = linear(flatten(u), w.at("fc1.weight"), w.at("fc1.bias"), true);
  std::vector<double> z = linear(h, w.at("fc2.weight"), w.at("fc2.bias"), false);
  double m = z[0];
  for (double v : z) m = std::max(m, v);
  double s = 0;
  for (double v : z) s += std::exp(v - m);
  for (double& v : z) v = v - m - std::log(s);
  r.logits = z;
  return r;
}

TEST(StnDigitsAssets, WeightsHaveTheTutorialKeys) {
  const StateDict w = io::load_safetensors((kAssets / "weights/stn_digits.safetensors").string());
  expect_keys(w, {{"localization.0.weight", {8, 1, 7, 7}},
                  {"localization.0.bias", {8}},
                  {"localization.3.weight", {10, 8, 5, 5}},
                  {"localization.3.bias", {10}},
                  {"fc_loc.0.weight", {32, 90}},
                  {"fc_loc.0.bias", {32}},
                  {"fc_loc.2.weight", {6, 32}},
                  {"fc_loc.2.bias", {6}},
                  {"conv1.weight", {10, 1, 5, 5}},
                  {"conv1.bias", {10}},
                  {"conv2.weight", {20, 10, 5, 5}},
                  {"conv2.bias", {20}},
                  {"fc1.weight", {50, 320}},
                  {"fc1.bias", {50}},
                  {"fc2.weight", {10, 50}},
                  {"fc2.bias", {10}}});
}

TEST(StnDigitsAssets, NaiveForwardReproducesTheCheckPair) {
  const StateDict w = io::load_safetensors((kAssets / "weights/stn_digits.safetensors").string());
  const auto dir = kAssets / "weights/stn_digits_check";
  const Tensor input = io::read_npy((dir / "input.npy").string());
  const Tensor logits = io::read_npy((dir / "logits.npy").string());
  const Tensor theta = io::read_npy((dir / "theta.npy").string());
  const Tensor labels = io::read_npy((dir / "labels.npy").string());
  ASSERT_EQ(input.shape(), (Shape{8, 1, 28, 28}));
  ASSERT_EQ(logits.shape(), (Shape{8, 10}));
  ASSERT_EQ(theta.shape(), (Shape{8, 2, 3}));
  ASSERT_EQ(labels.shape(), (Shape{8}));
  int correct = 0;
  for (int n = 0; n < 8; ++n) {
    Map x{1, 28, 28, std::vector<double>(input.data() + n * 784, input.data() + (n + 1) * 784)};
    const StnResult r = stn_forward(w, x);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(r.theta[i], theta[n * 6 + i], 1e-4) << n << "," << i;
    int best = 0;
    for (int c = 0; c < 10; ++c) {
      EXPECT_NEAR(r.logits[c], logits[n * 10 + c], 1e-4 + 1e-4 * std::abs(logits[n * 10 + c]))
          << "sample " << n << " class " << c;
      if (r.logits[c] > r.logits[best]) best = c;
    }
    correct += best == static_cast<int>(labels[n]);
  }
  EXPECT_GE(correct, 5);  // a trained model: most of the 8 held-out samples right
}

TEST(StnDigitsAssets, DistortedDigitsAreLabelled) {
  std::ifstream in(kAssets / "digits/labels.json");
  ASSERT_TRUE(in);
  const auto labels = nlohmann::json::parse(in);
  ASSERT_EQ(labels.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "distorted_%02d.png", i);
    ASSERT_TRUE(labels.contains(name)) << name;
    const int label = labels[name]["label"].get<int>();
    EXPECT_TRUE(label >= 0 && label <= 9);
    const cv::Mat img = cv::imread((kAssets / "digits" / name).string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(img.empty()) << name;
    EXPECT_EQ(img.type(), CV_8UC1) << name;
    EXPECT_EQ(img.size(), cv::Size(28, 28)) << name;
  }
}

// ---- naive attention_shapes network (model card assets/weights/attention_shapes.md) -----------

struct ShapesResult {
  std::vector<double> logits, sk_attention, offset, mask, channel_attention, spatial_attention;
};

ShapesResult shapes_forward(const StateDict& w, const Map& x) {
  ShapesResult r;
  const Tensor none;
  // stem: conv s2 -> BN -> ReLU -> conv -> BN -> ReLU -> maxpool
  Map h = relu(batch_norm(conv(x, w.at("stem.0.weight"), none, 2, 1), w, "stem.1"));
  h = max_pool2(relu(batch_norm(conv(h, w.at("stem.3.weight"), none, 1, 1), w, "stem.4")));
  // SelectiveKernel: split input, paths with dilation 1 and 2, softmax over paths per channel.
  const int half = h.c / 2;
  std::vector<Map> f;
  for (int p = 0; p < 2; ++p) {
    const std::string pre = "sk.paths." + std::to_string(p);
    f.push_back(relu(batch_norm(conv(channels(h, p * half, (p + 1) * half),
                                     w.at(pre + ".conv.weight"), none, 1, p + 1, p + 1),
                                w, pre + ".bn")));
  }
  const int c = f[0].c, hw = f[0].h * f[0].w;
  Map s{c, 1, 1, std::vector<double>(static_cast<std::size_t>(c))};
  for (int ci = 0; ci < c; ++ci) {
    double sum = 0;
    for (int i = 0; i < hw; ++i)
      sum += f[0].v[static_cast<std::size_t>(ci * hw + i)] +
             f[1].v[static_cast<std::size_t>(ci * hw + i)];
    s.v[static_cast<std::size_t>(ci)] = sum / hw;
  }
  const Map z = relu(batch_norm(conv(s, w.at("sk.attn.fc_reduce.weight"), none), w, "sk.attn.bn"));
  const Map t = conv(z, w.at("sk.attn.fc_select.weight"), none);  // [2C]
  Map y{c, f[0].h, f[0].w, std::vector<double>(f[0].v.size(), 0.0)};
  r.sk_attention.resize(static_cast<std::size_t>(2 * c));
  for (int ci = 0; ci < c; ++ci) {
    const double a = t.v[static_cast<std::size_t>(ci)], b = t.v[static_cast<std::size_t>(c + ci)];
    const double m = std::max(a, b);
    const double wa = std::exp(a - m) / (std::exp(a - m) + std::exp(b - m)), wb = 1 - wa;
    r.sk_attention[static_cast<std::size_t>(ci)] = wa;
    r.sk_attention[static_cast<std::size_t>(c + ci)] = wb;
    for (int i = 0; i < hw; ++i) {
      const auto k = static_cast<std::size_t>(ci * hw + i);
      y.v[k] = wa * f[0].v[k] + wb * f[1].v[k];
    }
  }
  // ModulatedDeformConv2dPack 3x3, padding 1: offsets = o[0:18], mask = sigmoid(o[18:27]).
  const Map o = conv(y, w.at("dcn.conv_offset.weight"), w.at("dcn.conv_offset.bias"), 1, 1);
  r.offset.assign(o.v.begin(), o.v.begin() + 18 * hw);
  for (int i = 18 * hw; i < 27 * hw; ++i)
    r.mask.push_back(sigmoid(o.v[static_cast<std::size_t>(i)]));
  const Tensor& wd = w.at("dcn.weight");
  const int cout = static_cast<int>(wd.dim(0));
  Map d{cout, y.h, y.w, std::vector<double>(static_cast<std::size_t>(cout) * hw)};
  std::vector<double> col(static_cast<std::size_t>(c) * 9);
  for (int oy = 0; oy < y.h; ++oy)
    for (int ox = 0; ox < y.w; ++ox) {
      for (int k = 0; k < 9; ++k) {
        const double py = oy - 1 + k / 3 + o.at(2 * k, oy, ox);
        const double px = ox - 1 + k % 3 + o.at(2 * k + 1, oy, ox);
        const double m = sigmoid(o.at(18 + k, oy, ox));
        for (int ci = 0; ci < c; ++ci) {
          double val = 0;
          if (py > -1 && py < y.h && px > -1 && px < y.w) {
            const int y0 = static_cast<int>(std::floor(py)), x0 = static_cast<int>(std::floor(px));
            const double ly = py - y0, lx = px - x0;
            auto at = [&](int yy, int xx) {
              return yy >= 0 && xx >= 0 && yy < y.h && xx < y.w ? y.at(ci, yy, xx) : 0.0;
            };
            val = (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) +
                  ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1);
          }
          col[static_cast<std::size_t>(ci * 9 + k)] = m * val;
        }
      }
      for (int oc = 0; oc < cout; ++oc) {
        double acc = w.at("dcn.bias")[oc];
        for (int ci = 0; ci < c; ++ci)
          for (int k = 0; k < 9; ++k)
            acc += wd.at(oc, ci, k / 3, k % 3) * col[static_cast<std::size_t>(ci * 9 + k)];
        d.at(oc, oy, ox) = acc;
      }
    }
  Map e = relu(batch_norm(d, w, "dcn_bn"));
  // CBAM: channel gate from mean and max through the shared MLP, then the spatial gate.
  Map avg{e.c, 1, 1, std::vector<double>(static_cast<std::size_t>(e.c))}, mx = avg;
  for (int ci = 0; ci < e.c; ++ci) {
    double sum = 0, best = -1e300;
    for (int i = 0; i < hw; ++i) {
      const double v = e.v[static_cast<std::size_t>(ci * hw + i)];
      sum += v, best = std::max(best, v);
    }
    avg.v[static_cast<std::size_t>(ci)] = sum / hw;
    mx.v[static_cast<std::size_t>(ci)] = best;
  }
  auto mlp = [&](const Map& v) {
    return conv(relu(conv(v, w.at("cbam.channel.fc1.weight"), none)),
                w.at("cbam.channel.fc2.weight"), none);
  };
  const Map ga = mlp(avg), gm = mlp(mx);
  for (int ci = 0; ci < e.c; ++ci) {
    const double g =
        sigmoid(ga.v[static_cast<std::size_t>(ci)] + gm.v[static_cast<std::size_t>(ci)]);
    r.channel_attention.push_back(g);
    for (int i = 0; i < hw; ++i) e.v[static_cast<std::size_t>(ci * hw + i)] *= g;
  }
  Map pooled{2, e.h, e.w, std::vector<double>(static_cast<std::size_t>(2 * hw))};
  for (int i = 0; i < hw; ++i) {
    double sum = 0, best = -1e300;
    for (int ci = 0; ci < e.c; ++ci) {
      const double v = e.v[static_cast<std::size_t>(ci * hw + i)];
      sum += v, best = std::max(best, v);
    }
    pooled.v[static_cast<std::size_t>(i)] = sum / e.c;
    pooled.v[static_cast<std::size_t>(hw + i)] = best;
  }
  const Map q = batch_norm(conv(pooled, w.at("cbam.spatial.conv.conv.weight"), none, 1, 3), w,
                           "cbam.spatial.conv.bn");
  std::vector<double> gap(static_cast<std::size_t>(e.c), 0.0);
  for (int i = 0; i < hw; ++i) {
    const double sg = sigmoid(q.v[static_cast<std::size_t>(i)]);
    r.spatial_attention.push_back(sg);
    for (int ci = 0; ci < e.c; ++ci)
      gap[static_cast<std::size_t>(ci)] += e.v[static_cast<std::size_t>(ci * hw + i)] * sg / hw;
  }
  r.logits = linear(gap, w.at("head.weight"), w.at("head.bias"), false);
  return r;
}

void expect_near(const std::vector<double>& actual, const Tensor& expected, std::int64_t offset,
                 const char* what) {
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double e = expected[offset + static_cast<std::int64_t>(i)];
    ASSERT_NEAR(actual[i], e, 1e-4 + 1e-4 * std::abs(e)) << what << " element " << i;
  }
}

TEST(AttentionShapesAssets, WeightsMatchTheModelCard) {
  const StateDict w =
      io::load_safetensors((kAssets / "weights/attention_shapes.safetensors").string());
  std::map<std::string, Shape> keys = {{"stem.0.weight", {16, 3, 3, 3}},
                                       {"stem.3.weight", {24, 16, 3, 3}},
                                       {"sk.paths.0.conv.weight", {24, 12, 3, 3}},
                                       {"sk.paths.1.conv.weight", {24, 12, 3, 3}},
                                       {"sk.attn.fc_reduce.weight", {8, 24, 1, 1}},
                                       {"sk.attn.fc_select.weight", {48, 8, 1, 1}},
                                       {"dcn.weight", {32, 24, 3, 3}},
                                       {"dcn.bias", {32}},
                                       {"dcn.conv_offset.weight", {27, 24, 3, 3}},
                                       {"dcn.conv_offset.bias", {27}},
                                       {"cbam.channel.fc1.weight", {2, 32, 1, 1}},
                                       {"cbam.channel.fc2.weight", {32, 2, 1, 1}},
                                       {"cbam.spatial.conv.conv.weight", {1, 2, 7, 7}},
                                       {"head.weight", {4, 32}},
                                       {"head.bias", {4}}};
  const std::vector<std::pair<std::string, std::int64_t>> norms = {
      {"stem.1", 16},    {"stem.4", 24}, {"sk.paths.0.bn", 24},      {"sk.paths.1.bn", 24},
      {"sk.attn.bn", 8}, {"dcn_bn", 32}, {"cbam.spatial.conv.bn", 1}};
  for (const auto& [prefix, n] : norms) {
    for (const char* field : {".weight", ".bias", ".running_mean", ".running_var"})
      keys[prefix + field] = {n};
    keys[prefix + ".num_batches_tracked"] = {};
  }
  expect_keys(w, keys);
}

TEST(AttentionShapesAssets, NaiveForwardReproducesTheCheckPair) {
  const StateDict w =
      io::load_safetensors((kAssets / "weights/attention_shapes.safetensors").string());
  const auto dir = kAssets / "weights/attention_shapes_check";
  auto load = [&](const char* name) {
    return io::read_npy((dir / (std::string(name) + ".npy")).string());
  };
  const Tensor input = load("input"), logits = load("logits"), labels = load("labels");
  const Tensor sk = load("sk_attention"), offset = load("offset"), mask = load("mask");
  const Tensor channel = load("channel_attention"), spatial = load("spatial_attention");
  ASSERT_EQ(input.shape(), (Shape{4, 3, 64, 64}));
  ASSERT_EQ(logits.shape(), (Shape{4, 4}));
  ASSERT_EQ(sk.shape(), (Shape{4, 2, 24}));
  ASSERT_EQ(offset.shape(), (Shape{4, 18, 16, 16}));
  ASSERT_EQ(mask.shape(), (Shape{4, 9, 16, 16}));
  ASSERT_EQ(channel.shape(), (Shape{4, 32}));
  ASSERT_EQ(spatial.shape(), (Shape{4, 1, 16, 16}));
  int correct = 0;
  for (int n = 0; n < 4; ++n) {
    Map x{3, 64, 64,
          std::vector<double>(input.data() + n * 3 * 4096, input.data() + (n + 1) * 3 * 4096)};
    const ShapesResult r = shapes_forward(w, x);
    expect_near(r.sk_attention, sk, n * 48, "sk_attention");
    expect_near(r.offset, offset, n * 18 * 256, "offset");
    expect_near(r.mask, mask, n * 9 * 256, "mask");
    expect_near(r.channel_attention, channel, n * 32, "channel_attention");
    expect_near(r.spatial_attention, spatial, n * 256, "spatial_attention");
    expect_near(r.logits, logits, n * 4, "logits");
    int best = 0;
    for (int c = 1; c < 4; ++c)
      best = r.logits[static_cast<std::size_t>(c)] > r.logits[static_cast<std::size_t>(best)]
                 ? c
                 : best;
    correct += best == static_cast<int>(labels[n]);
  }
  EXPECT_GE(correct, 3);
}

TEST(AttentionShapesAssets, SyntheticImagesAreAnnotated) {
  std::ifstream in(kAssets / "synthetic/annotations.json");
  ASSERT_TRUE(in);
  const auto notes = nlohmann::json::parse(in);
  ASSERT_EQ(notes["classes"].size(), 4u);
  ASSERT_EQ(notes["images"].size(), 12u);
  for (const auto& [name, note] : notes["images"].items()) {
    const cv::Mat img = cv::imread((kAssets / "synthetic" / name).string(), cv::IMREAD_COLOR);
    ASSERT_FALSE(img.empty()) << name;
    EXPECT_EQ(img.size(), cv::Size(64, 64)) << name;
    const auto box = note["box_xyxy"].get<std::vector<int>>();
    ASSERT_EQ(box.size(), 4u);
    EXPECT_TRUE(0 <= box[0] && box[0] < box[2] && box[2] <= 64 && 0 <= box[1] && box[1] < box[3] &&
                box[3] <= 64)
        << name;
  }
}

}  // namespace
}  // namespace cvattn
