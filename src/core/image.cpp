#include "cvattn/core/image.hpp"

#include <opencv2/dnn.hpp>

#include "cvattn/core/error.hpp"

namespace cvattn {
namespace {

void check_image(const cv::Mat& image, const char* where) {
  CVATTN_CHECK(!image.empty(), ValueError, where, ": the image is empty");
  CVATTN_CHECK(image.dims == 2, ShapeError, where, ": expected a 2-D image, got ", image.dims,
               " dims");
  CVATTN_CHECK(image.depth() == CV_8U || image.depth() == CV_32F, ValueError, where,
               ": expected an 8U or 32F image, got depth ", image.depth());
  const int cn = image.channels();
  CVATTN_CHECK(cn == 1 || cn == 3 || cn == 4, ValueError, where,
               ": expected 1, 3 or 4 channels, got ", cn);
}

}  // namespace

Tensor from_images(const std::vector<cv::Mat>& images, const ImageOptions& options) {
  CVATTN_CHECK(!images.empty(), ValueError, "from_images: no images");
  for (const auto& im : images) check_image(im, "from_images");
  for (int c = 0; c < images[0].channels(); ++c) {
    CVATTN_CHECK(options.std()[c] != 0.0, ValueError, "from_images: std[", c, "] is zero");
  }
  cv::Mat blob = cv::dnn::blobFromImages(images, options.scale(), options.size(), options.mean(),
                                         options.swap_rb(), options.crop(), CV_32F);
  Tensor t(blob);
  const cv::Scalar stdv = options.std();
  const auto s = t.nchw("from_images");
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t c = 0; c < s.c; ++c) {
      if (stdv[static_cast<int>(c)] != 1.0) {
        cv::Mat p = t.plane(n, c);
        p *= 1.0 / stdv[static_cast<int>(c)];
      }
    }
  }
  return t;
}

Tensor from_image(const cv::Mat& image, const ImageOptions& options) {
  check_image(image, "from_image");
  return from_images({image}, options);
}

cv::Mat to_image(const Tensor& blob, std::int64_t n, const ImageOptions& options) {
  const auto s = blob.nchw("to_image");
  CVATTN_CHECK(s.c == 1 || s.c == 3 || s.c == 4, ShapeError,
               "to_image: expected 1, 3 or 4 channels, got shape ", to_string(blob.shape()));
  CVATTN_CHECK(0 <= n && n < s.n, ShapeError, "to_image: sample ", n, " out of range for shape ",
               to_string(blob.shape()));
  CVATTN_CHECK(options.scale() != 0.0, ValueError, "to_image: scale is zero");
  for (int c = 0; c < static_cast<int>(s.c); ++c) {
    CVATTN_CHECK(options.std()[c] != 0.0, ValueError, "to_image: std[", c, "] is zero");
  }
  const cv::Scalar mean = options.mean();
  const cv::Scalar stdv = options.std();
  std::vector<cv::Mat> planes;
  for (std::int64_t c = 0; c < s.c; ++c) {
    const int ci = static_cast<int>(c);
    cv::Mat p;
    // x = (v - mean) * scale / std  =>  v = x * std / scale + mean
    blob.plane(n, c).convertTo(p, CV_8U, stdv[ci] / options.scale(), mean[ci]);
    planes.push_back(p);
  }
  if (options.swap_rb() && s.c >= 3) std::swap(planes[0], planes[2]);
  cv::Mat out;
  cv::merge(planes, out);
  return out;
}

}  // namespace cvattn
