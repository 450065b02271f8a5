// Checks shared by every format reader, so each malformed-input class has one message.
#include "formats/format.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::formats {

std::size_t read_head(FileSystem& fs, const std::filesystem::path& path, std::span<std::byte> head) {
  const auto file = fs.open(path);
  std::size_t got = 0;
  while (got < head.size()) {
    const std::size_t r = file->read_at(got, head.subspan(got));
    if (r == 0) break;
    got += r;
  }
  return got;
}

std::uint64_t checked_end(const std::filesystem::path& file, std::string_view what, std::uint64_t offset,
                          std::uint64_t length) {
  if (length > std::numeric_limits<std::uint64_t>::max() - offset)
    fail(ErrorCode::bad_input, file.string(), ": ", what, ": offset ", offset, " + length ", length,
         " overflows 64 bits");
  return offset + length;
}

void check_extent(const std::filesystem::path& file, std::string_view what, std::uint64_t offset, std::uint64_t length,
                  std::uint64_t file_size) {
  const std::uint64_t end = checked_end(file, what, offset, length);
  if (end > file_size)
    fail(ErrorCode::bad_input, file.string(), ": ", what, ": bytes [", offset, ", ", end,
         ") extend past the end of the file (", file_size, " bytes)");
}

std::uint64_t tensor_bytes(const std::filesystem::path& file, std::string_view tensor, DType dtype,
                           std::span<const std::int64_t> shape) {
  const auto count = element_count(shape);
  if (!count)
    fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor,
         "': shape has a negative dimension or its element count overflows 64 bits");
  if (dtype == DType::STRING)
    fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor, "': STRING has no fixed size");
  const auto bytes = dtype_bytes(dtype, *count);
  if (!bytes)
    fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor, "': ", *count, " elements of ", dtype_name(dtype),
         " are not a whole number of blocks or overflow 64 bits");
  return *bytes;
}

void check_tensor_length(const std::filesystem::path& file, std::string_view tensor, DType dtype,
                         std::span<const std::int64_t> shape, std::uint64_t length) {
  const std::uint64_t expected = tensor_bytes(file, tensor, dtype, shape);
  if (expected != length)
    fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor, "': ", dtype_name(dtype), " × shape needs ",
         expected, " bytes but the file stores ", length);
}

std::filesystem::path resolve_inside(const std::filesystem::path& model_dir, std::string_view relative,
                                     const std::filesystem::path& file, std::string_view what) {
  const std::filesystem::path rel(relative);
  if (relative.empty() || rel.is_absolute() || rel.has_root_name())
    fail(ErrorCode::bad_input, file.string(), ": ", what, " '", relative,
         "' must be a relative path inside the model folder");
  const std::filesystem::path normal = rel.lexically_normal();
  if (normal.empty() || *normal.begin() == "..")
    fail(ErrorCode::bad_input, file.string(), ": ", what, " '", relative, "' escapes the model folder");
  return model_dir.empty() ? normal : model_dir / normal;
}

namespace {

// A name as an error message quotes it: hostile names may be megabytes long.
std::string quoted_name(std::string_view name) {
  constexpr std::size_t kShown = 64;
  if (name.size() <= kShown) return str("'", name, "'");
  return str("'", name.substr(0, kShown), "...' (", name.size(), " bytes)");
}

}  // namespace

void TensorCaps::check_declared(const std::filesystem::path& file, std::string_view field, std::uint64_t count) const {
  if (count > limits_.max_tensors - std::min(tensors_, limits_.max_tensors))
    fail(ErrorCode::bad_input, file.string(), ": ", field, ": ", count, " tensors",
         tensors_ ? str(" after ", tensors_, " already read") : std::string(), " exceed lwload's limit of ",
         limits_.max_tensors, " tensors per model (OpenOptions::max_tensors)");
}

void TensorCaps::too_many(const std::filesystem::path& file, std::string_view field, std::string_view name) const {
  fail(ErrorCode::bad_input, file.string(), ": ", field, ": tensor ", quoted_name(name),
       " is one more than lwload's limit of ", limits_.max_tensors, " tensors per model (OpenOptions::max_tensors)");
}

void TensorCaps::names_too_long(const std::filesystem::path& file, std::string_view field,
                                std::string_view name) const {
  fail(ErrorCode::bad_input, file.string(), ": ", field, ": the name of tensor ", quoted_name(name),
       " takes the tensor names past lwload's limit of ", limits_.max_name_bytes,
       " bytes per model (OpenOptions::max_name_bytes; ", name_bytes_, " bytes before it)");
}

const TensorInfo* find_duplicate_name(std::span<const TensorInfo> tensors) {
  if (tensors.size() < 2) return nullptr;
  if (tensors.size() >= std::numeric_limits<std::uint32_t>::max())
    fail(ErrorCode::unsupported, "cannot check ", tensors.size(), " tensor names: at most 2^32 - 2");
  std::size_t slots = 4;
  while (slots < 2 * tensors.size()) slots *= 2;
  constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
  // The bits an index leaves free hold a tag of the name's hash (never all ones, so no slot reads
  // kEmpty): a probe whose tag differs skips the name, a cache miss into a record far away.
  const int index_bits = std::bit_width(tensors.size() - 1);
  const std::uint32_t index_mask = index_bits >= 32 ? kEmpty : (std::uint32_t{1} << index_bits) - 1;
  const auto tag_of = [&](std::size_t hash) {
    std::uint32_t tag = static_cast<std::uint32_t>(static_cast<std::uint64_t>(hash) >> 32) & ~index_mask;
    if (tag == ~index_mask) tag &= tag - 1;
    return tag;
  };
  std::vector<std::uint32_t> table(slots, kEmpty);
  const std::hash<std::string_view> hash_of;
  // Each name's hash is taken kAhead names before its probe, and its slot fetched then: the
  // table is random access, and the fetches overlap instead of each probe waiting for its own.
  constexpr std::size_t kAhead = 8;
  std::array<std::size_t, kAhead> ahead{};
  const auto fetch = [&](std::size_t i) {
    ahead[i % kAhead] = hash_of(tensors[i].name);
    __builtin_prefetch(&table[ahead[i % kAhead] & (slots - 1)]);
  };
  for (std::size_t i = 0; i < std::min(kAhead, tensors.size()); ++i) fetch(i);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string_view name = tensors[i].name;
    const std::size_t hash = ahead[i % kAhead];
    if (i + kAhead < tensors.size()) fetch(i + kAhead);
    const std::uint32_t tag = tag_of(hash);
    for (std::size_t s = hash & (slots - 1);; s = (s + 1) & (slots - 1)) {
      if (table[s] == kEmpty) {
        table[s] = static_cast<std::uint32_t>(i) | tag;
        break;
      }
      if ((table[s] & ~index_mask) == tag && tensors[table[s] & index_mask].name == name) return &tensors[i];
    }
  }
  return nullptr;
}

std::uint32_t file_index(Manifest& manifest, const std::filesystem::path& path) {
  const auto it = std::find(manifest.files.begin(), manifest.files.end(), path);
  if (it != manifest.files.end()) return static_cast<std::uint32_t>(it - manifest.files.begin());
  manifest.files.push_back(path);
  return static_cast<std::uint32_t>(manifest.files.size() - 1);
}

}  // namespace lwload::formats
