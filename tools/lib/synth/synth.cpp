// Writes synthetic safetensors and GGUF models in a streaming fashion.
#include "synth/synth.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::synth {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t round_down(std::uint64_t value, std::uint64_t multiple) { return value / multiple * multiple; }
std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Writes to a temporary name beside `path` and renames it on close(), so a failed write (a full
// disk) leaves no truncated model behind under the name a user would load.
class Output {
 public:
  explicit Output(const std::filesystem::path& path)
      : path_(path), temporary_(path.string() + ".partial"), file_(std::fopen(temporary_.c_str(), "wb")) {
    if (!file_) fail(ErrorCode::io, path.string(), ": cannot create ", temporary_.string(), ": ", std::strerror(errno));
  }
  ~Output() {
    if (!file_) return;
    std::fclose(file_);
    std::error_code ignored;
    std::filesystem::remove(temporary_, ignored);
  }
  void write(const void* data, std::size_t n) {
    if (std::fwrite(data, 1, n, file_) != n)
      fail(ErrorCode::io, path_.string(), ": write failed: ", std::strerror(errno));
    written_ += n;
  }
  void write(std::string_view s) { write(s.data(), s.size()); }
  template <typename T>
  void put(T value) {
    write(&value, sizeof value);
  }  // little-endian hosts only (see header_reader)
  void pad_to(std::uint64_t position) {
    static const char zeros[4096] = {};
    while (written_ < position)
      write(zeros, static_cast<std::size_t>(std::min<std::uint64_t>(sizeof zeros, position - written_)));
  }
  void close() {
    const bool flushed = std::fflush(file_) == 0 && std::ferror(file_) == 0;
    const int flush_errno = errno;
    if (!flushed) fail(ErrorCode::io, path_.string(), ": write failed: ", std::strerror(flush_errno));
    if (std::fclose(std::exchange(file_, nullptr)) != 0) {
      std::filesystem::remove(temporary_);
      fail(ErrorCode::io, path_.string(), ": close failed: ", std::strerror(errno));
    }
    std::filesystem::rename(temporary_, path_);
  }
  std::uint64_t written() const { return written_; }

  // Streams tensor `index`'s deterministic contents.
  void tensor_data(std::uint64_t seed, std::uint32_t index, std::uint64_t bytes) {
    std::vector<std::byte> chunk(std::min<std::uint64_t>(bytes, 4u << 20));
    for (std::uint64_t done = 0; done < bytes;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), bytes - done));
      expected_bytes(seed, index, done, std::span(chunk).first(n));
      write(chunk.data(), n);
      done += n;
    }
  }

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  std::FILE* file_;
  std::uint64_t written_ = 0;
};

struct TensorSizes {
  std::uint64_t tensor_bytes;
  std::uint64_t elements;
};

TensorSizes layout_for(const SynthSpec& spec, std::uint64_t granule) {
  const auto block = dtype_layout(spec.dtype);
  if (!block || block->partial_block_rounds_up)
    fail(ErrorCode::usage, "synth: unsupported dtype ", dtype_name(spec.dtype));
  if (spec.tensor_count == 0) fail(ErrorCode::usage, "synth: tensor count must be at least 1");
  // A tensor is a whole number of blocks and, when aligned, of the alignment.
  std::uint64_t unit = block->block_bytes;
  if (granule > 1) unit = std::lcm(unit, granule);
  const std::uint64_t bytes = std::max(unit, round_down(spec.total_bytes / spec.tensor_count, unit));
  return {bytes, bytes / block->block_bytes * block->block_elems};
}

void write_safetensors(const std::filesystem::path& path, const SynthSpec& spec) {
  const TensorSizes layout = layout_for(spec, spec.alignment);
  std::string header = "{\"__metadata__\":{\"writer\":\"lwload synth\"}";
  for (std::uint32_t i = 0; i < spec.tensor_count; ++i) {
    header += str(",\"", tensor_name(i), "\":{\"dtype\":\"", dtype_name(spec.dtype), "\",\"shape\":[", layout.elements,
                  "],\"data_offsets\":[", i * layout.tensor_bytes, ",", (i + 1) * layout.tensor_bytes, "]}");
  }
  header += "}";
  // Pad with spaces (as the reference writer does) to 8, or so data starts `alignment`-aligned.
  const std::uint64_t data_align = spec.alignment ? std::max<std::uint64_t>(spec.alignment, 8) : 8;
  header.resize(round_up(8 + header.size(), data_align) - 8, ' ');
  Output out(path);
  out.put<std::uint64_t>(header.size());
  out.write(header);
  for (std::uint32_t i = 0; i < spec.tensor_count; ++i) out.tensor_data(spec.seed, i, layout.tensor_bytes);
  out.close();
}

void gguf_string(Output& out, std::string_view s) {
  out.put<std::uint64_t>(s.size());
  out.write(s);
}

std::uint32_t ggml_id(DType type) {
  switch (type) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::Q8_0: return 8;
    case DType::I8: return 24;
    default: fail(ErrorCode::usage, "synth: gguf has no synth support for ", dtype_name(type));
  }
}

void write_gguf(const std::filesystem::path& path, const SynthSpec& spec) {
  const std::uint64_t alignment = spec.alignment ? spec.alignment : 32;
  const TensorSizes layout = layout_for(spec, 1);
  const std::uint64_t stride = round_up(layout.tensor_bytes, alignment);
  Output out(path);
  out.write("GGUF");
  out.put<std::uint32_t>(3);
  out.put<std::uint64_t>(spec.tensor_count);
  out.put<std::uint64_t>(2);  // KV count
  gguf_string(out, "general.architecture");
  out.put<std::uint32_t>(8);  // string
  gguf_string(out, "synth");
  gguf_string(out, "general.alignment");
  out.put<std::uint32_t>(4);  // uint32
  out.put<std::uint32_t>(static_cast<std::uint32_t>(alignment));
  for (std::uint32_t i = 0; i < spec.tensor_count; ++i) {
    gguf_string(out, tensor_name(i));
    out.put<std::uint32_t>(1);
    out.put<std::uint64_t>(layout.elements);
    out.put<std::uint32_t>(ggml_id(spec.dtype));
    out.put<std::uint64_t>(i * stride);
  }
  const std::uint64_t data_start = round_up(out.written(), alignment);
  for (std::uint32_t i = 0; i < spec.tensor_count; ++i) {
    out.pad_to(data_start + i * stride);
    out.tensor_data(spec.seed, i, layout.tensor_bytes);
  }
  out.close();
}

}  // namespace

std::optional<Layout> layout_from_name(std::string_view name) {
  if (name == "packed") return Layout::packed;
  if (name == "aligned") return Layout::aligned;
  return std::nullopt;
}

std::string_view layout_name(Layout layout) { return layout == Layout::packed ? "packed" : "aligned"; }

std::uint64_t layout_alignment(std::string_view format, Layout layout) {
  if (layout == Layout::aligned) return 4096;
  return format == "gguf" ? 32 : 0;  // safetensors 0: contiguous data, header padded to 8
}

std::string tensor_name(std::uint32_t tensor_index) {
  char name[16];
  std::snprintf(name, sizeof name, "t%05u", tensor_index);
  return name;
}

void expected_bytes(std::uint64_t seed, std::uint32_t tensor_index, std::uint64_t offset, std::span<std::byte> out) {
  const std::uint64_t stream = splitmix64(seed ^ (std::uint64_t{tensor_index} << 32));
  std::size_t i = 0;
  while (i < out.size()) {
    const std::uint64_t word_index = (offset + i) / 8;
    const std::uint64_t word = splitmix64(stream + word_index);
    const std::size_t in_word = static_cast<std::size_t>((offset + i) % 8);
    const std::size_t n = std::min<std::size_t>(8 - in_word, out.size() - i);
    std::memcpy(out.data() + i, reinterpret_cast<const std::byte*>(&word) + in_word, n);
    i += n;
  }
}

void write_model(const std::filesystem::path& path, const SynthSpec& spec) {
  if (spec.format == "safetensors") return write_safetensors(path, spec);
  if (spec.format == "gguf") return write_gguf(path, spec);
  fail(ErrorCode::usage, "synth: format '", spec.format, "' is not supported (safetensors, gguf)");
}

}  // namespace lwload::synth
