// Densifying a sparse tensor (Encoding::sparse) the way TFLite's Densify op does: walk the levels
// in traversal order (dense levels visit every coordinate, CSR levels the coordinates their
// segments list), and at each leaf put the next stored value at the dense position the levels'
// coordinates name. The reader checked the structure (tflite_model.cpp); every bound is checked
// again here because a Manifest is a public struct an application may build itself.
#include <cstring>

#include "formats/decode/encoded.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

class Densifier {
 public:
  Densifier(const TensorInfo& tensor, std::span<const std::byte> values, std::span<std::byte> out,
            const std::filesystem::path& file)
      : tensor_(tensor),
        sparsity_(*tensor.sparsity),
        values_(values),
        out_(out),
        file_(file),
        rank_(tensor.shape.size()),
        coordinates_(sparsity_.levels.size()) {
    const auto layout = dtype_layout(tensor.dtype);
    width_ = layout && layout->block_elems == 1 ? layout->block_bytes : 0;
    if (width_ == 0 || sparsity_.levels.size() != sparsity_.traversal_order.size() ||
        sparsity_.levels.size() != rank_ + sparsity_.block_map.size() || values_.size() % width_ != 0 ||
        out_.size() != sparsity_.dense_bytes || out_.size() % width_ != 0)
      bad("its sparsity does not describe a ", dtype_name(tensor.dtype), " tensor of this shape");
  }

  void run() {
    std::memset(out_.data(), 0, out_.size());
    walk(0, 0);
    if (next_ * width_ != values_.size())
      bad("the sparsity places ", next_, " values, the file stores ", values_.size() / width_);
  }

 private:
  void walk(std::size_t level, std::uint64_t parent) {
    if (level == sparsity_.levels.size()) return place();
    const Sparsity::Level& l = sparsity_.levels[level];
    if (!l.sparse) {
      for (std::uint32_t i = 0; i < l.size; ++i) {
        coordinates_[level] = i;
        walk(level + 1, parent * l.size + i);
      }
      return;
    }
    if (parent + 1 >= l.segments.size()) bad("level ", level, " has no segment for position ", parent);
    const std::uint64_t end = l.segments[parent + 1];
    if (end > l.indices.size()) bad("level ", level, " segment ", parent, " ends past its indices");
    for (std::uint64_t k = l.segments[parent]; k < end; ++k) {
      if (l.indices[k] >= l.size) bad("level ", level, " index ", k, " is outside the level");
      coordinates_[level] = l.indices[k];
      walk(level + 1, k);
    }
  }

  // The dense position: each tensor dimension's coordinate, refined by its block level if any.
  void place() {
    std::uint64_t flat = 0;
    for (std::size_t d = 0; d < rank_; ++d) {
      std::uint64_t c = 0;
      for (std::size_t i = 0; i < rank_; ++i)
        if (static_cast<std::size_t>(sparsity_.traversal_order[i]) == d) c = coordinates_[i];
      for (std::size_t j = 0; j < sparsity_.block_map.size(); ++j)
        if (static_cast<std::size_t>(sparsity_.block_map[j]) == d)
          c = c * sparsity_.levels[rank_ + j].size + coordinates_[rank_ + j];
      if (c >= static_cast<std::uint64_t>(tensor_.shape[d])) bad("a coordinate lies outside dimension ", d);
      flat = flat * static_cast<std::uint64_t>(tensor_.shape[d]) + c;
    }
    if ((next_ + 1) * width_ > values_.size()) bad("the sparsity places more values than the file stores");
    std::memcpy(out_.data() + flat * width_, values_.data() + next_ * width_, width_);
    ++next_;
  }

  template <typename... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail(ErrorCode::bad_input, file_.string(), ": tensor '", tensor_.name, "': cannot densify: ", parts...);
  }

  const TensorInfo& tensor_;
  const Sparsity& sparsity_;
  std::span<const std::byte> values_;
  std::span<std::byte> out_;
  const std::filesystem::path& file_;
  std::size_t rank_;
  std::size_t width_ = 0;
  std::vector<std::uint32_t> coordinates_;  // per level, of the position being visited
  std::uint64_t next_ = 0;                  // stored values placed so far
};

}  // namespace

void densify(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
             const std::filesystem::path& file) {
  if (!tensor.sparsity)
    fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': sparse encoding without sparsity");
  Densifier(tensor, encoded, out, file).run();
}

}  // namespace lwload::formats
