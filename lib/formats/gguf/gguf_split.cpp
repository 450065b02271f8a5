// Split GGUF: parts are found by name (the seam has no directory listing, and llama.cpp finds them
// the same way: "%s-%05d-of-%05d.gguf"), each read by the ordinary GGUF reader, then checked
// against each other before their tensors are merged.
#include "formats/gguf/gguf_split.hpp"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>

#include "formats/format.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

constexpr std::string_view kSplitNo = "split.no";
constexpr std::string_view kSplitCount = "split.count";
constexpr std::string_view kSplitTensors = "split.tensors.count";
constexpr std::string_view kArchitecture = "general.architecture";
constexpr std::uint64_t kMaxParts = 9999;  // llama.cpp's names have 5 digits; real models have < 100 parts

const MetaValue* find_meta(const Manifest& m, std::string_view key) {
  for (const auto& entry : m.metadata)
    if (entry.key == key) return &entry.value;
  return nullptr;
}

// An integer key of any GGUF integer type (gguf-split writes UINT16 and INT32), or nullopt.
std::optional<std::uint64_t> meta_uint(const Manifest& m, std::string_view key) {
  const MetaValue* v = find_meta(m, key);
  if (!v) return std::nullopt;
  if (const auto* u = std::get_if<std::uint64_t>(&v->value)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&v->value); i && *i >= 0) return static_cast<std::uint64_t>(*i);
  return std::nullopt;
}

std::uint64_t require_uint(const Manifest& m, const std::filesystem::path& file, std::string_view key) {
  const auto v = meta_uint(m, key);
  if (!v)
    fail(ErrorCode::bad_input, file.string(), ": split GGUF: key '", key, "' is missing or not a non-negative integer");
  return *v;
}

std::optional<std::string> meta_string(const Manifest& m, std::string_view key) {
  const MetaValue* v = find_meta(m, key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  return std::nullopt;
}

// NAME-<no>-of-<count>.gguf: NAME, and the digit width the writer used.
struct SplitName {
  std::string prefix;
  std::size_t width = 5;
  std::uint64_t number = 0;
  std::uint64_t count = 0;
};

std::optional<SplitName> parse_name(const std::string& filename) {
  constexpr std::string_view kExt = ".gguf";
  constexpr std::string_view kOf = "-of-";
  if (filename.size() <= kExt.size() || filename.compare(filename.size() - kExt.size(), kExt.size(), kExt) != 0)
    return std::nullopt;
  const std::string stem = filename.substr(0, filename.size() - kExt.size());
  const auto of = stem.rfind(kOf);
  if (of == std::string::npos) return std::nullopt;
  const auto dash = stem.rfind('-', of == 0 ? 0 : of - 1);
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  const std::string number = stem.substr(dash + 1, of - dash - 1);
  const std::string count = stem.substr(of + kOf.size());
  SplitName name;
  name.prefix = stem.substr(0, dash);
  name.width = number.size();
  const auto parse = [](const std::string& digits, std::uint64_t& out) {
    if (digits.empty() || digits.size() > 9) return false;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && end == digits.data() + digits.size();
  };
  if (!parse(number, name.number) || !parse(count, name.count)) return std::nullopt;
  return name;
}

std::string part_name(const SplitName& name, std::uint64_t number) {
  std::string n = std::to_string(number);
  std::string c = std::to_string(name.count);
  if (n.size() < name.width) n.insert(0, name.width - n.size(), '0');
  if (c.size() < name.width) c.insert(0, name.width - c.size(), '0');
  return name.prefix + "-" + n + "-of-" + c + ".gguf";
}

}  // namespace

bool is_gguf_split(const Manifest& part) { return find_meta(part, kSplitCount) != nullptr; }

Manifest read_gguf_split(FileSystem& fs, const std::filesystem::path& opened, Manifest opened_manifest,
                         TensorCaps& caps) {
  const std::uint64_t count = require_uint(opened_manifest, opened, kSplitCount);
  const std::uint64_t opened_no = require_uint(opened_manifest, opened, kSplitNo);
  const std::uint64_t total_tensors = require_uint(opened_manifest, opened, kSplitTensors);
  const auto architecture = meta_string(opened_manifest, kArchitecture);
  if (count == 0 || count > kMaxParts)
    fail(ErrorCode::bad_input, opened.string(), ": split GGUF: split.count ", count, " is not between 1 and ",
         kMaxParts);
  if (opened_no >= count)
    fail(ErrorCode::bad_input, opened.string(), ": split GGUF: split.no ", opened_no, " is not below split.count ",
         count);
  const auto name = parse_name(opened.filename().string());
  if (!name)
    fail(ErrorCode::bad_input, opened.string(), ": split GGUF (split.count ", count,
         ") but the file is not named NAME-0000k-of-0000N.gguf, so its other parts cannot be found");
  if (name->count != count || name->number != opened_no + 1)
    fail(ErrorCode::bad_input, opened.string(), ": split GGUF: the name says part ", name->number, " of ", name->count,
         " but the header says split.no ", opened_no, " (0-based) of split.count ", count);

  Manifest merged;
  merged.format = "gguf";
  std::unordered_map<std::string, std::uint32_t> owner;  // tensor name -> part
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::filesystem::path path = opened.parent_path() / part_name(*name, k + 1);
    if (k != opened_no && !fs.exists(path))
      fail(ErrorCode::bad_input, opened.string(), ": split GGUF: part ", k + 1, " of ", count, " ('", path.string(),
           "') is missing");
    Manifest part = k == opened_no ? std::move(opened_manifest) : read_gguf_file(fs, path, caps);
    if (!is_gguf_split(part))
      fail(ErrorCode::bad_input, path.string(), ": split GGUF part ", k + 1, " of ", count, " has no split.count key");
    const auto check = [&](std::string_view key, std::uint64_t expected) {
      const std::uint64_t v = require_uint(part, path, key);
      if (v != expected)
        fail(ErrorCode::bad_input, path.string(), ": split GGUF: ", key, " is ", v, " but ",
             k == 0 ? opened.string() : merged.files.front().string(), " says ", expected);
    };
    check(kSplitCount, count);
    check(kSplitNo, k);
    check(kSplitTensors, total_tensors);
    const auto arch = meta_string(part, kArchitecture);
    if (arch && architecture && *arch != *architecture)
      fail(ErrorCode::bad_input, path.string(), ": split GGUF: general.architecture '", *arch, "' differs from '",
           *architecture, "' in ", opened.string());

    const auto file = static_cast<std::uint32_t>(merged.files.size());
    merged.files.push_back(path);
    for (TensorInfo& tensor : part.tensors) {
      const auto [it, inserted] = owner.emplace(tensor.name, file);
      if (!inserted)
        fail(ErrorCode::bad_input, path.string(), ": split GGUF: tensor '", tensor.name, "' also appears in ",
             merged.files[it->second].string());
      for (Piece& piece : tensor.pieces) piece.file = file;
      merged.tensors.push_back(std::move(tensor));
    }
    if (k == 0) merged.metadata = std::move(part.metadata);  // gguf-split keeps the model's KVs in part 1
  }
  if (merged.tensors.size() != total_tensors)
    fail(ErrorCode::bad_input, opened.string(), ": split GGUF: split.tensors.count is ", total_tensors, " but the ",
         count, " parts hold ", merged.tensors.size(), " tensors");
  return merged;
}

}  // namespace lwload::formats
