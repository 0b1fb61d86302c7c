// align_images: estimate the affine warp between two images through the differentiable sampler
// and compare with OpenCV's cv::findTransformECC (MOTION_AFFINE) on the same pair.
//
// The warp is theta [1, 2, 3] in grid_sample's normalised coordinates, mapping the template's
// lattice into the moving image (the role of ECC's warp matrix): aligned = grid_sample(moving,
// affine_grid(theta)). It minimises the photometric MSE between aligned and the template by
// Gauss-Newton, coarse to fine over an image pyramid (theta in normalised coordinates carries over
// between levels unchanged). Each step runs grid_sample, then grid_sample_backward with a mask as
// grad_output, which gives each pixel's derivative d aligned / d grid = (gx, gy); the gradient
// J^T r of the loss is affine_grid_backward(grad_grid * residual) and the Gauss-Newton matrix
// J^T J is summed from (gx, gy) times the lattice coordinates (u, v, 1). Steps that raise the
// loss are halved. The pictures label this estimate "GD".
//
// By default the pair is one bundled photo and a copy warped by a known affine with a little
// noise, so both estimates are scored by their corner error in pixels against the known warp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/video/tracking.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"
#include "sample_cli.hpp"

namespace fs = std::filesystem;
namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

// Pixel coordinates (x, y) -> grid_sample's normalised ones (align_corners=false), as a 3x3.
cv::Matx33d normaliser(cv::Size s) {
  return {2.0 / s.width, 0, 1.0 / s.width - 1, 0, 2.0 / s.height, 1.0 / s.height - 1, 0, 0, 1};
}
cv::Matx33d homogeneous(const cv::Matx23d& a) {
  return {a(0, 0), a(0, 1), a(0, 2), a(1, 0), a(1, 1), a(1, 2), 0, 0, 1};
}
// theta (normalised) -> the pixel affine from template to moving coordinates.
cv::Matx23d theta_to_pixels(const cv::Matx23d& theta, cv::Size tmpl, cv::Size moving) {
  return (normaliser(moving).inv() * homogeneous(theta) * normaliser(tmpl)).get_minor<2, 3>(0, 0);
}
Tensor theta_tensor(const cv::Matx23d& t) {
  Tensor out = Tensor::empty({1, 2, 3});
  for (int i = 0; i < 6; ++i) out.data()[i] = static_cast<float>(t.val[i]);
  return out;
}

// The largest distance between where two warps send the template's four corner pixels.
double corner_error(const cv::Matx23d& a, const cv::Matx23d& b, cv::Size s) {
  double worst = 0;
  for (const cv::Vec3d& c :
       {cv::Vec3d(0, 0, 1), cv::Vec3d(s.width - 1, 0, 1), cv::Vec3d(0, s.height - 1, 1),
        cv::Vec3d(s.width - 1, s.height - 1, 1)}) {
    worst = std::max(worst, cv::norm(a * c - b * c));
  }
  return worst;
}

struct Fit {
  cv::Matx23d theta;
  double rmse = 0;
  int iterations = 0;
};

// Gauss-Newton on mean((grid_sample(moving, affine_grid(theta)) - tmpl)^2) at one pyramid level.
Fit gauss_newton(const Tensor& tmpl, const Tensor& moving, cv::Matx23d theta, int max_iterations) {
  const cvattn::Shape size = tmpl.shape();
  const auto opt = F::GridSampleOptions().padding_mode(F::PaddingMode::border);
  const Tensor base = F::affine_grid(theta_tensor({1, 0, 0, 0, 1, 0}), size);  // (u, v) per pixel
  const std::int64_t count = size[2] * size[3];
  const double mw = static_cast<double>(moving.dim(3)), mh = static_cast<double>(moving.dim(2));
  // Residual and in-image mask of a theta; returns the loss.
  auto evaluate = [&](const cv::Matx23d& t, Tensor& grid, Tensor& residual, Tensor& mask) {
    grid = F::affine_grid(theta_tensor(t), size);
    residual = F::grid_sample(moving, grid, opt);
    mask = Tensor::empty({1, 1, size[2], size[3]});
    double sum = 0, used = 0;
    for (std::int64_t p = 0; p < count; ++p) {
      // Only samples between the moving image's outer pixel centres count.
      const float gx = grid.data()[2 * p], gy = grid.data()[2 * p + 1];
      const bool inside = std::abs(gx) <= 1 - 1 / mw && std::abs(gy) <= 1 - 1 / mh;
      mask.data()[p] = inside ? 1.0f : 0.0f;
      residual.data()[p] = inside ? residual.data()[p] - tmpl.data()[p] : 0.0f;
      sum += static_cast<double>(residual.data()[p]) * residual.data()[p];
      used += inside;
    }
    return used > 0 ? sum / used : 1e30;
  };
  Fit fit{theta, 0, 0};
  Tensor grid, residual, mask;
  double loss = evaluate(theta, grid, residual, mask);
  for (; fit.iterations < max_iterations; ++fit.iterations) {
    const Tensor d = F::grid_sample_backward(moving, grid, mask, opt).grad_grid;  // (gx, gy)
    Tensor weighted = d.clone();
    for (std::int64_t p = 0; p < count; ++p) {
      weighted.data()[2 * p] *= residual.data()[p];
      weighted.data()[2 * p + 1] *= residual.data()[p];
    }
    const Tensor g = F::affine_grid_backward(weighted, size);  // J^T r, [1, 2, 3]
    cv::Matx66d h = cv::Matx66d::zeros();
    for (std::int64_t p = 0; p < count; ++p) {
      const double u = base.data()[2 * p], v = base.data()[2 * p + 1];
      const double gx = d.data()[2 * p], gy = d.data()[2 * p + 1];
      const cv::Vec6d j(gx * u, gx * v, gx, gy * u, gy * v, gy);
      h += j * j.t();
    }
    cv::Vec6d rhs;
    for (int i = 0; i < 6; ++i) rhs[i] = -g.data()[i];
    const cv::Matx<double, 6, 1> step = h.solve(rhs, cv::DECOMP_SVD);
    double scale = 1.0, next = loss;
    cv::Matx23d candidate;
    for (int tries = 0; tries < 6; ++tries, scale *= 0.5) {
      for (int i = 0; i < 6; ++i) candidate.val[i] = theta.val[i] + scale * step(i);
      next = evaluate(candidate, grid, residual, mask);
      if (next < loss) break;
    }
    if (!(next < loss)) {
      evaluate(theta, grid, residual, mask);  // no better point along the step: converged
      break;
    }
    theta = candidate;
    loss = next;
    if (cv::norm(step) * scale < 1e-7) break;
  }
  fit.theta = theta;
  fit.rmse = std::sqrt(loss);
  return fit;
}

cv::Mat gray_float(const cv::Mat& bgr) {
  cv::Mat gray, out;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  gray.convertTo(out, CV_32F, 1.0 / 255);
  return out;
}
// PNG at the highest compression (OpenCV's default favours speed), IoError on failure.
void write_png(const fs::path& file, const cv::Mat& image) {
  if (!cv::imwrite(file.string(), image, {cv::IMWRITE_PNG_COMPRESSION, 9})) {
    throw cvattn::IoError("cannot write " + file.string());
  }
}

// |a - b| of the gray levels, times 4 so small residuals stay visible.
cv::Mat difference(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat ga, gb, d, bgr;
  cv::cvtColor(a, ga, cv::COLOR_BGR2GRAY);
  cv::cvtColor(b, gb, cv::COLOR_BGR2GRAY);
  cv::absdiff(ga, gb, d);
  cv::cvtColor(d * 4, bgr, cv::COLOR_GRAY2BGR);
  return bgr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string keys =
      std::string(
          "{help h    |                   | print this help }"
          "{input i   | images/chelsea.jpg | template image (relative to --assets unless it "
          "exists) }"
          "{moving m  |                   | image to align to it; empty: the template warped by a "
          "known affine }"
          "{output o  | out/align_images  | folder for the PNGs }"
          "{image     |                   | the same as --input (older name) }"
          "{angle     | 6                 | known warp: rotation in degrees about the centre }"
          "{zoom      | 1.05              | known warp: scale }"
          "{shift     | 7,-5              | known warp: translation in pixels (x,y) }"
          "{noise     | 3                 | known warp: Gaussian noise sigma on 0..255 }"
          "{levels    | 3                 | pyramid levels for the gradient descent }"
          "{threads   | 1                 | threads for cvattn and OpenCV (timed runs) }"
          "{cell      | 0                 | contact-sheet cell width in pixels (0: the template's) "
          "}") +
      sample::assets_key();
  const std::string about =
      "align_images: affine alignment by Gauss-Newton through grid_sample and its backward, "
      "compared with cv::findTransformECC";
  if (const auto done = sample::check_command_line(argc, argv, keys, about)) return *done;
  cv::CommandLineParser parser(argc, argv, keys);
  const auto find_asset = [](const std::string& p) { return sample::find_asset(p); };
  const std::string image_alias = parser.get<std::string>("image");
  const fs::path image_file =
      find_asset(image_alias.empty() ? parser.get<std::string>("input") : image_alias);
  const std::string moving_name = parser.get<std::string>("moving");
  const fs::path output = parser.get<std::string>("output");
  const double angle = parser.get<double>("angle"), zoom = parser.get<double>("zoom");
  const std::string shift_text = parser.get<std::string>("shift");
  const double noise = parser.get<double>("noise");
  const int levels = parser.get<int>("levels"), threads = parser.get<int>("threads");
  const int cell = parser.get<int>("cell");
  if (!parser.check()) return sample::value_errors(parser, "align_images");
  try {
    if (levels < 1 || levels > 8) throw cvattn::ValueError("--levels must be in 1..8");
    if (threads < 1) throw cvattn::ValueError("--threads must be at least 1");
    if (cell < 0 || cell > 4096) throw cvattn::ValueError("--cell must be in 0..4096");
    cvattn::set_num_threads(threads);
    cv::setNumThreads(threads);
    const cv::Mat tmpl_bgr = cv::imread(image_file.string(), cv::IMREAD_COLOR);
    if (tmpl_bgr.empty()) throw cvattn::IoError("cannot read image " + image_file.string());
    cv::Mat moving_bgr;
    const bool known = moving_name.empty();
    cv::Matx23d truth;  // template pixel -> moving pixel
    if (known) {
      double sx = 0, sy = 0;
      if (std::sscanf(shift_text.c_str(), "%lf,%lf", &sx, &sy) != 2) {
        throw cvattn::ValueError("--shift expects x,y, got '" + shift_text + "'");
      }
      const cv::Point2f centre((tmpl_bgr.cols - 1) / 2.0f, (tmpl_bgr.rows - 1) / 2.0f);
      truth = cv::Matx23d(cv::getRotationMatrix2D(centre, angle, zoom));
      truth(0, 2) += sx;
      truth(1, 2) += sy;
      // moving(truth * x) = template(x); reflected borders so no black wedges enter the fit.
      cv::warpAffine(tmpl_bgr, moving_bgr, truth, tmpl_bgr.size(), cv::INTER_LINEAR,
                     cv::BORDER_REFLECT101);
      cv::Mat n(moving_bgr.size(), CV_32FC3);
      cv::RNG(12345).fill(n, cv::RNG::NORMAL, 0.0, noise);
      cv::Mat noisy;
      moving_bgr.convertTo(noisy, CV_32FC3);
      cv::Mat(noisy + n).convertTo(moving_bgr, CV_8UC3);
    } else {
      moving_bgr = cv::imread(find_asset(moving_name).string(), cv::IMREAD_COLOR);
      if (moving_bgr.empty()) throw cvattn::IoError("cannot read image " + moving_name);
    }
    const cv::Size ts = tmpl_bgr.size(), ms = moving_bgr.size();
    const cv::Mat tmpl = gray_float(tmpl_bgr), moving = gray_float(moving_bgr);

    // Gradient descent (Gauss-Newton) through the sampler, coarse to fine.
    cv::TickMeter gd_timer;
    gd_timer.start();
    std::vector<cv::Mat> tp, mp;
    cv::buildPyramid(tmpl, tp, levels - 1);
    cv::buildPyramid(moving, mp, levels - 1);
    Fit fit{{1, 0, 0, 0, 1, 0}, 0, 0};
    int iterations = 0;
    for (int l = levels - 1; l >= 0; --l) {
      fit = gauss_newton(cvattn::from_image(tp[l]), cvattn::from_image(mp[l]), fit.theta, 30);
      iterations += fit.iterations;
    }
    gd_timer.stop();
    const cv::Matx23d gd_pixels = theta_to_pixels(fit.theta, ts, ms);

    // OpenCV's ECC on the same pair, full resolution, from the identity.
    cv::TickMeter ecc_timer;
    cv::Mat ecc_warp = cv::Mat::eye(2, 3, CV_32F);
    double ecc_rho = 0;
    ecc_timer.start();
    try {
      ecc_rho = cv::findTransformECC(
          tmpl, moving, ecc_warp, cv::MOTION_AFFINE,
          cv::TermCriteria(cv::TermCriteria::COUNT + cv::TermCriteria::EPS, 200, 1e-6),
          cv::noArray(), 5);
    } catch (const cv::Exception& e) {
      std::cerr << "align_images: findTransformECC did not converge: " << e.what() << "\n";
    }
    ecc_timer.stop();
    cv::Matx23d ecc_pixels;
    for (int i = 0; i < 6; ++i) ecc_pixels.val[i] = ecc_warp.at<float>(i / 3, i % 3);

    // Both warps applied to the colour moving image: ours through grid_sample.
    const Tensor aligned_t =
        F::grid_sample(cvattn::from_image(moving_bgr),
                       F::affine_grid(theta_tensor(fit.theta), {1, 3, ts.height, ts.width}));
    const cv::Mat aligned_gd = cvattn::to_image(aligned_t);
    cv::Mat aligned_ecc;
    cv::warpAffine(moving_bgr, aligned_ecc, ecc_pixels, ts,
                   cv::INTER_LINEAR | cv::WARP_INVERSE_MAP);
    cv::Mat moving_resized;
    cv::resize(moving_bgr, moving_resized, ts);

    std::printf("pair: %s %dx%d, %s %dx%d\n", image_file.filename().c_str(), ts.width, ts.height,
                known ? "known warp" : moving_name.c_str(), ms.width, ms.height);
    std::printf("gradient descent (Gauss-Newton through grid_sample, %d levels, %d iterations): ",
                levels, iterations);
    if (known) std::printf("corner error %.3f px, ", corner_error(gd_pixels, truth, ts));
    std::printf("rmse %.4f, time %.2f ms\n", fit.rmse, gd_timer.getTimeMilli());
    std::printf("findTransformECC (MOTION_AFFINE, rho %.4f): ", ecc_rho);
    if (known) std::printf("corner error %.3f px, ", corner_error(ecc_pixels, truth, ts));
    std::printf("time %.2f ms\n", ecc_timer.getTimeMilli());
    std::printf("the two estimates differ by %.3f px at the corners\n",
                corner_error(gd_pixels, ecc_pixels, ts));

    fs::create_directories(output);
    const std::vector<cvattn::viz::Panel> panels = {
        {"template", tmpl_bgr},
        {"moving", moving_resized},
        {"|template - moving| x4", difference(tmpl_bgr, moving_resized)},
        {"aligned (GD)", aligned_gd},
        {"aligned (ECC)", aligned_ecc},
        {"|template - GD| x4", difference(tmpl_bgr, aligned_gd)},
        {"|template - ECC| x4", difference(tmpl_bgr, aligned_ecc)}};
    const char* names[] = {"template",    "moving",  "diff_before", "aligned_gd",
                           "aligned_ecc", "diff_gd", "diff_ecc"};
    for (std::size_t i = 0; i < panels.size(); ++i) {
      write_png(output / (std::string(names[i]) + ".png"), panels[i].image);
    }
    // Cells keep the template's aspect ratio.
    const cv::Size cell_size = cell > 0 ? cv::Size(cell, cell * ts.height / ts.width) : ts;
    write_png(output / "align_images.png",
              cvattn::viz::contact_sheet(panels, 4,
                                         cvattn::viz::ContactSheetOptions().cell_size(cell_size)));
    std::cout << "wrote " << panels.size() + 1 << " PNGs to " << output.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "align_images: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
