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
  // blobFromImages reads every image with the first one's channel count and depth (a 32F image
  // after an 8U one came out as zeros); other sizes are resized to the first one's.
  for (std::size_t i = 1; i < images.size(); ++i) {
    CVATTN_CHECK(images[i].channels() == images[0].channels(), ShapeError, "from_images: image ", i,
                 " has ", images[i].channels(), " channels, image 0 has ", images[0].channels());
    CVATTN_CHECK(images[i].depth() == images[0].depth(), ValueError, "from_images: image ", i,
                 " has depth ", images[i].depth(), ", image 0 has depth ", images[0].depth(),
                 " (convert them to one type)");
  }
  const cv::Size size = options.size();
  CVATTN_CHECK((size.width == 0 && size.height == 0) || (size.width > 0 && size.height > 0),
               ValueError, "from_images: target size ", size.width, "x", size.height,
               " must be positive (or 0x0 to keep the image size)");
  // Check the blob's size against the allocation cap before OpenCV allocates it.
  const cv::Size out = size.width > 0 ? size : images[0].size();
  (void)checked_numel(
      {static_cast<std::int64_t>(images.size()), images[0].channels(), out.height, out.width},
      "from_images");
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
  // cv::merge of empty planes died with SIGILL inside OpenCV.
  CVATTN_CHECK(s.h > 0 && s.w > 0, ShapeError, "to_image: empty image plane in shape ",
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
    cv::Mat v, p;
    // x = (v - mean) * scale / std  =>  v = x * std / scale + mean
    blob.plane(n, c).convertTo(v, CV_32F, stdv[ci] / options.scale(), mean[ci]);
    // Clamp in float first: OpenCV's float -> 8U rounding sends values beyond the int range
    // (1e30, Inf) to 0 rather than 255, and NaN must not reach it either.
    cv::patchNaNs(v, 0.0);
    cv::min(v, 255.0, v);
    cv::max(v, 0.0, v);
    v.convertTo(p, CV_8U);
    planes.push_back(p);
  }
  if (options.swap_rb() && s.c >= 3) std::swap(planes[0], planes[2]);
  cv::Mat out;
  cv::merge(planes, out);
  return out;
}

}  // namespace cvattn
