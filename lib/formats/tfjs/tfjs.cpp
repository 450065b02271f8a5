// TensorFlow.js reader: `model.json` (its `weightsManifest`) or a bare `weights_manifest.json` (a
// JSON array of groups). Each group's `paths` (shard files, relative to the manifest's folder)
// concatenated form one byte stream holding the group's weights back to back, in manifest order;
// a weight that crosses a shard boundary becomes several pieces.
//
// dtype is what is stored: a quantized weight is U8/U16/F16 with Quantization{scheme "tfjs"}.
// `string` weights are sequences of (u32 LE length, bytes) and have no size in the manifest:
//  - the last weight of a group takes the rest of the stream (nothing is read);
//  - any other string weight forces a walk over its length prefixes (4 bytes per element, read
//    through the file seam in 64 KiB windows) to find where the next weight starts. tfjs itself
//    does the same walk; strings are rare in weights and never device-loadable.
#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>

#include "formats/tfjs/tfjs.hpp"
#include "formats/header_reader.hpp"
#include "formats/json/json_file.hpp"
#include "formats/json/json_select.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

// model.json carries the whole graph topology besides the manifest; large graphs reach tens of MB.
constexpr std::uint64_t kMaxManifestBytes = 512ull << 20;
// What the kept members' tree may take, and one streamed weight's: groups with their paths, and
// the metadata strings (the weights themselves stream by).
constexpr std::uint64_t kMaxManifestTree = 192ull << 20;
constexpr std::array<std::string_view, 2> kManifestNames{"model.json", "weights_manifest.json"};
// Looking for a manifest among a folder's other .json files: each file (hard links to one file are
// one file) scanned once, at most this many files and bytes in all.
constexpr std::size_t kMaxCandidates = 256;
constexpr std::uint64_t kMaxCandidateBytes = 128ull << 20;

// What reading a manifest may cost in string-weight walks: the bytes of the distinct shard files it
// names (each file's bytes walked once at most, however often a manifest lists it).
struct WalkBudget {
  std::unordered_set<std::string> files;  // the shard files counted
  std::uint64_t bytes = 0;                // their sizes
  std::uint64_t walked = 0;
};

std::optional<DType> weight_dtype(std::string_view name) {
  if (name == "float32") return DType::F32;
  if (name == "int32") return DType::I32;
  if (name == "bool") return DType::BOOL;
  if (name == "complex64") return DType::C64;
  if (name == "string") return DType::STRING;
  return std::nullopt;
}

std::optional<DType> quantized_dtype(std::string_view name) {
  if (name == "uint8") return DType::U8;
  if (name == "uint16") return DType::U16;
  if (name == "float16") return DType::F16;
  return std::nullopt;
}

// One shard of a group's byte stream.
struct Shard {
  fs::path path;
  std::uint32_t file = 0;   // index into Manifest::files
  std::uint64_t begin = 0;  // where it starts in the stream
  std::uint64_t size = 0;
};

// A group's shards seen as one stream: maps stream ranges to pieces, and reads the few bytes a
// string weight's length prefixes need (through a 64 KiB window, shard handles opened on demand).
class GroupStream {
 public:
  GroupStream(FileSystem& file_system, std::vector<Shard> shards) : fs_(file_system), shards_(std::move(shards)) {
    size_ = shards_.empty() ? 0 : shards_.back().begin + shards_.back().size;
  }

  std::uint64_t size() const noexcept { return size_; }

  std::vector<Piece> pieces(std::uint64_t begin, std::uint64_t length) const {
    std::vector<Piece> out;
    const std::uint64_t end = begin + length;  // caller checked end <= size_
    for (auto it = shard_at(begin); it != shards_.end() && it->begin < end; ++it) {
      const std::uint64_t from = std::max(begin, it->begin);
      const std::uint64_t to = std::min(end, it->begin + it->size);
      if (to > from) out.push_back(Piece{it->file, from - it->begin, to - from});
    }
    return out;
  }

  // The little-endian u32 at stream offset `pos` (caller checked pos + 4 <= size_).
  std::uint32_t u32(std::uint64_t pos) {
    if (pos < window_begin_ || pos + 4 > window_begin_ + window_len_) fill(pos);
    const std::size_t at = static_cast<std::size_t>(pos - window_begin_);
    return load_le<std::uint32_t>(window_.data() + at);
  }

 private:
  std::vector<Shard>::const_iterator shard_at(std::uint64_t pos) const {
    auto it = std::upper_bound(shards_.begin(), shards_.end(), pos,
                               [](std::uint64_t p, const Shard& s) { return p < s.begin; });
    return it == shards_.begin() ? it : std::prev(it);
  }

  void fill(std::uint64_t pos) {
    window_begin_ = pos;
    window_len_ = static_cast<std::size_t>(std::min<std::uint64_t>(window_.size(), size_ - pos));
    std::size_t done = 0;
    for (auto it = shard_at(pos); done < window_len_ && it != shards_.end(); ++it) {
      const std::uint64_t at = pos + done;
      if (at >= it->begin + it->size) continue;
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(window_len_ - done, it->begin + it->size - at));
      if (open_path_ != it->path) {
        open_ = fs_.open(it->path);
        open_path_ = it->path;
      }
      open_->read_exact(at - it->begin, std::span(window_).subspan(done, n), "string length prefixes");
      done += n;
    }
  }

  FileSystem& fs_;
  std::vector<Shard> shards_;
  std::uint64_t size_ = 0;
  std::unique_ptr<RandomAccessFile> open_;
  fs::path open_path_;
  std::array<std::byte, 64 * 1024> window_{};
  std::uint64_t window_begin_ = 0;
  std::size_t window_len_ = 0;
};

// Stream bytes of a `string` weight of `count` elements starting at `begin`. The walk reads no more,
// over the whole manifest, than the distinct shard files hold (a shard listed again is not read again
// for free).
std::uint64_t string_weight_bytes(GroupStream& stream, std::uint64_t begin, std::uint64_t count, bool last_in_group,
                                  const fs::path& manifest_path, std::string_view where, WalkBudget& budget) {
  const std::uint64_t remaining = stream.size() - begin;
  if (count > remaining / 4)
    fail(ErrorCode::bad_input, manifest_path.string(), ": ", where, ": ", count,
         " strings need at least 4 bytes each but only ", remaining, " bytes of the group's shards remain");
  if (count == 0) return 0;
  if (last_in_group) return remaining;
  std::uint64_t pos = begin;
  const std::uint64_t allowed = budget.bytes - std::min(budget.bytes, budget.walked);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (pos - begin > allowed)
      fail(ErrorCode::bad_input, manifest_path.string(), ": ", where,
           ": the string weights' length prefixes span more than ", budget.bytes,
           " bytes, all the shard files named hold: shards listed again would be read again");
    if (stream.size() - pos < 4)
      fail(ErrorCode::bad_input, manifest_path.string(), ": ", where, ": string ", i,
           " length prefix at stream offset ", pos, " lies past the end of the group's shards (", stream.size(),
           " bytes)");
    const std::uint32_t len = stream.u32(pos);
    pos += 4;
    if (len > stream.size() - pos)
      fail(ErrorCode::bad_input, manifest_path.string(), ": ", where, ": string ", i, " of ", len,
           " bytes at stream offset ", pos, " extends past the end of the group's shards (", stream.size(), " bytes)");
    pos += len;
  }
  budget.walked += pos - begin;
  return pos - begin;
}

std::shared_ptr<const Quantization> parse_quantization(const json::object& weight, DType original, const fs::path& path,
                                                       const std::string& where, DType* stored) {
  const json::value* q = weight.if_contains("quantization");
  if (!q || q->is_null()) return nullptr;
  const std::string q_where = where + " field 'quantization'";
  const json::object& obj = as_object(*q, path, q_where);
  const std::string_view q_dtype = as_string(required(obj, "dtype", path, q_where), path, q_where + ".dtype");
  const auto type = quantized_dtype(q_dtype);
  if (!type) fail(ErrorCode::bad_input, path.string(), ": ", q_where, ": unknown quantization dtype '", q_dtype, "'");
  if (original == DType::STRING)
    fail(ErrorCode::bad_input, path.string(), ": ", where, ": string weights cannot be quantized");

  Quantization out;
  out.scheme = "tfjs";
  out.original_dtype = original;
  if (const json::value* od = obj.if_contains("original_dtype"); od && !od->is_null()) {
    const std::string_view od_name = as_string(*od, path, q_where + ".original_dtype");
    const auto od_type = weight_dtype(od_name);
    if (!od_type) fail(ErrorCode::bad_input, path.string(), ": ", q_where, ": unknown original_dtype '", od_name, "'");
    out.original_dtype = *od_type;
  }
  const json::value* scale = obj.if_contains("scale");
  const json::value* min = obj.if_contains("min");
  // tfjs' decoder dequantizes uint8/uint16 as value * scale + min and refuses weights without both.
  if (*type != DType::F16 && (!scale || !min))
    fail(ErrorCode::bad_input, path.string(), ": ", q_where, ": ", q_dtype, " quantization needs 'scale' and 'min'");
  if (scale) out.scale.push_back(as_double(*scale, path, q_where + ".scale"));
  if (min) out.min = as_double(*min, path, q_where + ".min");
  *stored = *type;
  return std::make_shared<const Quantization>(std::move(out));
}

std::vector<Shard> open_shards(FileSystem& file_system, const json::object& group, const fs::path& path,
                               const std::string& group_where, std::string_view first_tensor, Manifest& manifest,
                               WalkBudget& budget) {
  const json::array& paths =
      as_array(required(group, "paths", path, group_where), path, group_where + " field 'paths'");
  const fs::path dir = path.parent_path();
  std::vector<Shard> shards;
  shards.reserve(paths.size());
  std::uint64_t begin = 0;
  // A path listed again is the same file: checked and sized once (a manifest may list one shard
  // thousands of times, each a reference, never a new file to open).
  std::unordered_map<std::string_view, std::size_t> seen;  // name → its first shard
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string what = str(group_where, " paths[", i, "]");
    const std::string_view name = as_string(paths[i], path, what);
    if (const auto it = seen.find(name); it != seen.end()) {
      Shard again = shards[it->second];
      if (again.size > std::numeric_limits<std::uint64_t>::max() - begin)
        fail(ErrorCode::bad_input, path.string(), ": ", group_where, ": shard sizes overflow 64 bits");
      again.begin = begin;
      begin += again.size;
      shards.push_back(std::move(again));
      continue;
    }
    seen.emplace(name, shards.size());
    const fs::path shard_path = resolve_inside(dir, name, path, what);
    if (!file_system.exists(shard_path) || file_system.is_directory(shard_path))
      fail(ErrorCode::bad_input, path.string(), ": ", what, ": shard '", name, "' (holding tensor '", first_tensor,
           "') is missing: ", shard_path.string(),
           file_system.exists(shard_path) ? " is a directory, not a file" : " does not exist");
    const std::uint64_t size = file_system.open(shard_path)->size();
    if (size > std::numeric_limits<std::uint64_t>::max() - begin)
      fail(ErrorCode::bad_input, path.string(), ": ", group_where, ": shard sizes overflow 64 bits");
    if (budget.files.insert(shard_path.lexically_normal().string()).second) budget.bytes += size;
    shards.push_back(Shard{shard_path, file_index(manifest, shard_path), begin, size});
    begin += size;
  }
  return shards;
}

// A weight as its group lists it (streamed from the manifest, one at a time): everything but
// where its bytes are, which its group's shards decide (read_group).
TensorInfo listed_weight(const json::value& value, std::size_t group_index, std::size_t index, const fs::path& path,
                         TensorCaps& caps) {
  // Built per weight, so by concatenation (str()'s ostringstream costs a second per million).
  const std::string weight_where =
      "weightsManifest[" + std::to_string(group_index) + "].weights[" + std::to_string(index) + "]";
  const json::object& weight = as_object(value, path, weight_where);
  TensorInfo t;
  t.name = std::string(as_string(required(weight, "name", path, weight_where), path, weight_where + " field 'name'"));
  caps.admit(path, weight_where, t.name);
  const std::string where = "tensor '" + t.name + "' (" + weight_where + ")";
  const std::string_view dtype_text = as_string(required(weight, "dtype", path, where), path, where + " field 'dtype'");
  const auto original = weight_dtype(dtype_text);
  if (!original) fail(ErrorCode::bad_input, path.string(), ": ", where, ": unknown dtype '", dtype_text, "'");
  t.dtype = *original;
  t.shape = as_shape(required(weight, "shape", path, where), path, where + " field 'shape'");
  t.quantization = parse_quantization(weight, *original, path, where, &t.dtype);
  return t;
}

// Places a group's weights (listed in the manifest already, streamed) in its shards' byte stream,
// back to back.
void read_group(FileSystem& file_system, const json::value& group_value, std::size_t group_index,
                std::span<TensorInfo> weights, const fs::path& path, Manifest& manifest, WalkBudget& budget) {
  const std::string group_where = str("weightsManifest[", group_index, "]");
  const json::object& group = as_object(group_value, path, group_where);
  // The tree keeps "weights" as an empty array (its items were streamed into `weights`); anything
  // else under that key is refused here.
  (void)as_array(required(group, "weights", path, group_where), path, group_where + " field 'weights'");
  const std::string first_tensor = weights.empty() ? "(none)" : weights.front().name;
  GroupStream stream(file_system, open_shards(file_system, group, path, group_where, first_tensor, manifest, budget));

  std::uint64_t cursor = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    TensorInfo& t = weights[i];
    const std::string where = "tensor '" + t.name + "' (" + group_where + ".weights[" + std::to_string(i) + "])";
    if (t.dtype == DType::STRING) {
      const auto count = element_count(t.shape);
      if (!count)
        fail(ErrorCode::bad_input, path.string(), ": ", where, ": the shape's element count overflows 64 bits");
      t.bytes = string_weight_bytes(stream, cursor, *count, i + 1 == weights.size(), path, where, budget);
    } else {
      t.bytes = tensor_bytes(path, t.name, t.dtype, t.shape);
    }
    if (t.bytes > stream.size() - cursor)
      fail(ErrorCode::bad_input, path.string(), ": ", where, ": needs bytes [", cursor, ", ",
           checked_end(path, where, cursor, t.bytes), ") of the group's byte stream, but its shards hold only ",
           stream.size(), " bytes");
    t.pieces = stream.pieces(cursor, t.bytes);
    cursor += t.bytes;
  }
}

void add_string_metadata(const json::object& root, std::string_view key, Manifest& manifest) {
  if (const json::value* v = root.if_contains(key); v && v->is_string())
    manifest.metadata.push_back(MetaEntry{std::string(key), MetaValue{std::string(v->get_string())}});
}

// Whether `path` holds a TFJS manifest: an object with "weightsManifest" or an array whose first
// element is a {paths, weights} group — found by a streaming scan that builds no tree.
bool holds_manifest(FileSystem& file_system, const fs::path& path) {
  const auto top = sniff_json_top(file_system, path, kMaxManifestBytes, {"weightsManifest", "paths", "weights"});
  if (!top) return false;
  return top->array ? top->has[1] && top->has[2] : top->has[0];
}

// Only a file that opens can be a manifest here: a FIFO or a link out of the folder named *.json is
// not this reader's to report while it merely looks (opening it by name reports it).
bool holds_manifest_or_not(FileSystem& file_system, const fs::path& path) {
  try {
    return holds_manifest(file_system, path);
  } catch (const Error&) {
    return false;
  }
}

// The manifests a folder holds: model.json or weights_manifest.json when present, else every .json
// whose content is one (converters name them freely: blazeface.json,
// face_landmark_68_model-weights_manifest.json).
std::vector<fs::path> manifests_in_folder(FileSystem& file_system, const fs::path& dir) {
  for (std::string_view name : kManifestNames)
    if (file_system.exists(dir / name) && !file_system.is_directory(dir / name)) return {dir / name};
  std::vector<fs::path> found;
  std::set<std::pair<std::uint64_t, std::uint64_t>> scanned;  // (device, inode): hard links scanned once
  std::size_t candidates = 0;
  std::uint64_t bytes = 0;
  for (const fs::path& entry : file_system.list(dir)) {
    if (entry.extension() != ".json" || file_system.is_directory(entry)) continue;
    FileIdentity id;
    try {
      id = file_system.open(entry)->identity();
    } catch (const Error&) {
      continue;  // a FIFO, a link out: not this reader's to report while it merely looks
    }
    if (id.inode != 0 && !scanned.insert({id.device, id.inode}).second) continue;
    if (++candidates > kMaxCandidates || id.size > kMaxCandidateBytes - std::min(bytes, kMaxCandidateBytes)) break;
    bytes += id.size;
    if (holds_manifest_or_not(file_system, entry)) found.push_back(entry);
  }
  return found;
}

bool starts_json(std::span<const std::byte> head) {
  for (const std::byte b : head) {
    const char c = static_cast<char>(b);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

bool detect(const ModelSource& source) {
  if (source.is_directory) return !manifests_in_folder(source.fs, source.path).empty();
  if (!starts_json(source.head)) return false;
  if (holds_manifest(source.fs, source.path)) return true;
  // Tie-break: a damaged or incomplete manifest under its usual name gets this reader's precise error.
  const std::string name = source.path.filename().string();
  return name == kManifestNames[0] || name == kManifestNames[1];
}

Manifest read(const ModelSource& source) {
  fs::path path = source.path;
  if (source.is_directory) {
    const auto found = manifests_in_folder(source.fs, source.path);
    if (found.empty())
      fail(ErrorCode::bad_input, source.path.string(),
           ": folder holds no TFJS manifest (model.json, weights_manifest.json or a .json with weightsManifest)");
    if (found.size() > 1) {
      std::string names;
      for (const fs::path& p : found) names += (names.empty() ? "" : ", ") + p.filename().string();
      fail(ErrorCode::bad_input, source.path.string(), ": folder holds ", found.size(), " TFJS manifests (", names,
           "): open the one you mean");
    }
    path = found.front();
  }
  const auto file = source.fs.open(path);
  if (file->size() > kMaxManifestBytes)
    fail(ErrorCode::bad_input, path.string(), ": manifest of ", file->size(), " bytes exceeds the limit of ",
         kMaxManifestBytes);
  // Only the members read below are kept (modelTopology, often most of model.json, streams by).
  // Each group's weights are handed over one at a time, never held as a tree, and go straight
  // into the manifest in document order; the groups' shards place them once the groups (and
  // their paths) are read.
  TensorCaps caps(source.limits);
  Manifest manifest;
  manifest.format = "tfjs";
  std::vector<std::size_t> group_sizes;  // weights per group, in manifest order
  StreamedItems weights;
  weights.within = "weightsManifest";
  weights.holder_depth_in_object = 3;  // model.json → weightsManifest[] → group
  weights.holder_depth_in_array = 2;   // weights_manifest.json: [] → group
  weights.key = "weights";
  const std::initializer_list<std::string_view> members = {"weightsManifest", "format", "generatedBy", "convertedBy"};
  weights.each = [&](std::size_t group, std::string_view, json::value&& weight) {
    if (group >= group_sizes.size()) group_sizes.resize(group + 1, 0);
    manifest.tensors.push_back(listed_weight(weight, group, group_sizes[group]++, path, caps));
  };
  const json::value doc = read_json_members(*file, 0, file->size(), "manifest", members, kMaxManifestTree, &weights);
  const json::array* groups = nullptr;
  if (doc.is_object()) {
    const json::object& root = doc.get_object();
    groups = &as_array(required(root, "weightsManifest", path, "model.json"), path, "weightsManifest");
    for (std::string_view key : {"format", "generatedBy", "convertedBy"}) add_string_metadata(root, key, manifest);
  } else {
    groups = &as_array(doc, path, "weights manifest");
  }
  group_sizes.resize(std::max(group_sizes.size(), groups->size()), 0);
  WalkBudget budget;
  std::size_t first = 0;
  for (std::size_t g = 0; g < groups->size(); ++g) {
    read_group(source.fs, (*groups)[g], g, std::span(manifest.tensors).subspan(first, group_sizes[g]), path, manifest,
               budget);
    first += group_sizes[g];
  }
  // A name listed twice: the later one is named, with where the manifest lists it.
  if (const TensorInfo* twice = find_duplicate_name(manifest.tensors)) {
    std::size_t at = static_cast<std::size_t>(twice - manifest.tensors.data()), g = 0;
    while (at >= group_sizes[g]) at -= group_sizes[g++];
    fail(ErrorCode::bad_input, path.string(), ": tensor '", twice->name, "' (weightsManifest[", g, "].weights[", at,
         "]): a weight of this name appears earlier in the manifest");
  }
  return manifest;
}

}  // namespace

const FormatReader tfjs_reader{"tfjs", detect, read};

}  // namespace lwload::formats
