// safetensors reader: single files (u64 LE header length, JSON header, packed data region) and
// sharded models described by a `*.safetensors.index.json` (`weight_map`: tensor → shard file).
//
// Validation follows the reference loader (huggingface/safetensors `Metadata::validate`): header
// at most 100,000,000 bytes, tensors sorted by data_offsets must tile the data region exactly (each
// begin == the previous end, the last end == the region's size), and dtype × shape == byte length.
// Only the header is read; pieces are absolute file offsets (8 + header length + begin).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>

#include "formats/safetensors/safetensors.hpp"
#include "formats/header_reader.hpp"
#include "formats/json/json_file.hpp"
#include "formats/json/json_select.hpp"
#include "formats/safetensors/safetensors_header.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference's MAX_HEADER_SIZE
// Index files are JSON maps of tensor names; even the largest published ones are a few MB.
constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

// File names a model folder may hold, in the order they are tried (the FileSystem seam has no
// directory listing, so a folder is recognised by the names Hugging Face tooling writes).
constexpr std::array<std::string_view, 2> kIndexNames{"model.safetensors.index.json",
                                                      "diffusion_pytorch_model.safetensors.index.json"};
constexpr std::array<std::string_view, 2> kSingleNames{"model.safetensors", "diffusion_pytorch_model.safetensors"};

bool ends_with(const fs::path& path, std::string_view suffix) {
  const std::string name = path.filename().string();
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::uint64_t le64(std::span<const std::byte> bytes) { return load_le<std::uint64_t>(bytes.data()); }

// A single safetensors file by content: a header length that fits the file, then '{'.
bool looks_like_single_file(std::span<const std::byte> head, std::uint64_t file_size) {
  if (head.size() < 9 || file_size < 9) return false;
  const std::uint64_t header_len = le64(head);
  return header_len >= 2 && header_len <= file_size - 8 && head[8] == std::byte{'{'};
}

bool starts_json_object(std::span<const std::byte> head) {
  for (const std::byte b : head) {
    const char c = static_cast<char>(b);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

std::vector<std::byte> read_head(const RandomAccessFile& file) {
  std::vector<std::byte> head(static_cast<std::size_t>(std::min<std::uint64_t>(64, file.size())));
  file.read_exact(0, head, "file head");
  return head;
}

// Reads one safetensors file's header and appends its tensors (in offset order) to `manifest`;
// its `__metadata__` entries are added unless a key is already present (sharded models).
void read_single(FileSystem& file_system, const fs::path& path, Manifest& manifest, TensorCaps& caps) {
  const auto file = file_system.open(path);
  const std::uint64_t size = file->size();
  if (size < 8)
    fail(ErrorCode::bad_input, path.string(), ": truncated: ", size,
         " bytes, but a safetensors file starts with an 8-byte header length");
  std::array<std::byte, 8> len_bytes;
  file->read_exact(0, len_bytes, "header length");
  const std::uint64_t header_len = le64(len_bytes);
  if (header_len > kMaxHeaderBytes)
    fail(ErrorCode::bad_input, path.string(), ": header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes,
         " bytes");
  if (header_len > size - 8)
    fail(ErrorCode::bad_input, path.string(), ": header length ", header_len,
         " exceeds the file (truncated? the file has ", size, " bytes)");
  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_len = size - data_start;

  // Records straight from the streamed header (no DOM of it), each entry validated on its own.
  const std::size_t first = manifest.tensors.size();
  parse_safetensors_header(*file, header_len, file_index(manifest, path), manifest, caps);
  const std::span<TensorInfo> tensors = std::span(manifest.tensors).subspan(first);

  // The JSON map has no order; the data region does. Writers emit offset order, so sorting is
  // usually a check; otherwise tensor indices (4 bytes each) are sorted, not the records.
  auto before = [&](std::size_t a, std::size_t b) {
    const Piece& pa = tensors[a].pieces.front();
    const Piece& pb = tensors[b].pieces.front();
    return pa.offset != pb.offset ? pa.offset < pb.offset : pa.length < pb.length;
  };
  std::vector<std::uint32_t> order;  // stays empty when the header is in offset order
  for (std::size_t k = 1; k < tensors.size(); ++k) {
    if (before(k, k - 1)) {
      order.resize(tensors.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
      std::stable_sort(order.begin(), order.end(), before);
      break;
    }
  }
  auto at = [&](std::size_t k) -> const TensorInfo& { return order.empty() ? tensors[k] : tensors[order[k]]; };

  // The sorted tensors must tile the data region exactly.
  std::uint64_t expected = 0;
  const TensorInfo* previous = nullptr;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const TensorInfo& t = at(k);
    const std::uint64_t begin = t.pieces.front().offset - data_start;
    const std::uint64_t end = begin + t.pieces.front().length;
    if (begin > expected)
      fail(ErrorCode::bad_input, path.string(), ": hole in the data region: bytes [", expected, ", ", begin,
           ") before tensor '", t.name, "' belong to no tensor");
    if (begin < expected) {
      const std::uint64_t previous_begin = previous->pieces.front().offset - data_start;
      fail(ErrorCode::bad_input, path.string(), ": tensor '", t.name, "' data_offsets [", begin, ", ", end,
           "] overlap tensor '", previous->name, "' [", previous_begin, ", ",
           previous_begin + previous->pieces.front().length, "]");
    }
    expected = end;
    previous = &t;
  }
  if (expected != data_len)
    fail(ErrorCode::bad_input, path.string(), ": the data region has ", data_len, " bytes but its tensors cover ",
         expected, " (bytes [", expected, ", ", data_len, ") belong to no tensor)");

  // Records into offset order: the permutation's cycles, each record moved once.
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] == i) continue;
    TensorInfo held = std::move(tensors[i]);
    std::size_t j = i;
    while (order[j] != i) {
      const std::size_t next = order[j];
      tensors[j] = std::move(tensors[next]);
      order[j] = static_cast<std::uint32_t>(j);
      j = next;
    }
    tensors[j] = std::move(held);
    order[j] = static_cast<std::uint32_t>(j);
  }

  // A JSON object may repeat a key; each tensor must be named once (only zero-length tensors
  // could repeat a name and still tile the data region).
  if (const TensorInfo* twice = find_duplicate_name(tensors))
    fail(ErrorCode::bad_input, path.string(), ": header: tensor '", twice->name, "' appears twice");
}

// A sharded model: every shard the index names is read (headers only) and every weight_map entry
// must be found in the shard it names.
void read_index(FileSystem& file_system, const fs::path& index_path, Manifest& manifest, TensorCaps& caps) {
  const auto file = file_system.open(index_path);
  if (file->size() > kMaxIndexBytes)
    fail(ErrorCode::bad_input, index_path.string(), ": index file of ", file->size(), " bytes exceeds the limit of ",
         kMaxIndexBytes);
  // metadata kept, weight_map handed over an entry at a time (a million entries never one tree),
  // anything else streams by; the tree capped at 192 MiB.
  std::vector<std::string> shard_names;                        // each distinct shard name as written
  std::unordered_map<std::string, std::uint32_t> shard_ids;    // name as written → its index there
  std::vector<std::pair<std::string, std::uint32_t>> entries;  // tensor → shard, in the index's order
  StreamedItems weight_map;
  weight_map.holder_depth_in_object = 1;
  weight_map.key = "weight_map";
  weight_map.each = [&](std::size_t, std::string_view tensor, json::value&& shard) {
    if (!shard.is_string()) (void)as_string(shard, index_path, str("weight_map entry for tensor '", tensor, "'"));
    const std::string_view name = shard.get_string();
    const auto [it, added] = shard_ids.try_emplace(std::string(name), static_cast<std::uint32_t>(shard_names.size()));
    if (added) shard_names.emplace_back(name);
    entries.emplace_back(std::string(tensor), it->second);
    caps.check_declared(index_path, "weight_map", entries.size());
  };
  const json::value index =
      read_json_members(*file, 0, file->size(), "index", {"weight_map", "metadata"}, 192ull << 20, &weight_map);
  const json::object& root = as_object(index, index_path, "index");
  (void)as_object(required(root, "weight_map", index_path, "index"), index_path, "weight_map");

  if (const json::value* meta = root.if_contains("metadata")) {
    for (const auto& [key, value] : as_object(*meta, index_path, "metadata"))
      manifest.metadata.push_back(MetaEntry{std::string(key), to_meta_value(value)});
  }

  // Shards in path order (model-00001-of-00003 ... is the natural order), each read once however
  // its name is spelled ("x" and "./x"), with the first tensor that names it for error messages.
  const fs::path dir = index_path.parent_path();
  std::map<fs::path, std::string> shards;                 // resolved path → first tensor
  std::vector<fs::path> shard_paths(shard_names.size());  // by shard id: the resolved path
  for (const auto& [tensor, shard] : entries) {
    if (!shard_paths[shard].empty()) continue;
    shard_paths[shard] =
        resolve_inside(dir, shard_names[shard], index_path, str("weight_map shard of tensor '", tensor, "'"));
    shards.emplace(shard_paths[shard], tensor);
  }
  for (const auto& [shard_path, first_tensor] : shards) {
    if (!file_system.exists(shard_path))
      fail(ErrorCode::bad_input, index_path.string(), ": shard '", shard_path.filename().string(),
           "' (holding tensor '", first_tensor, "') is missing: ", shard_path.string(), " does not exist");
    if (file_system.is_directory(shard_path))
      fail(ErrorCode::bad_input, index_path.string(), ": shard '", shard_path.filename().string(),
           "' (holding tensor '", first_tensor, "') is a directory, not a regular file: ", shard_path.string());
    read_single(file_system, shard_path, manifest, caps);
  }

  std::unordered_map<std::string_view, std::uint32_t> found;  // tensor → file index
  found.reserve(manifest.tensors.size());
  for (const TensorInfo& t : manifest.tensors) {
    const auto [it, inserted] = found.emplace(t.name, t.pieces.front().file);
    if (!inserted)
      fail(ErrorCode::bad_input, index_path.string(), ": tensor '", t.name,
           "' is stored in two shards: ", manifest.files[it->second].string(), " and ",
           manifest.files[t.pieces.front().file].string());
  }
  for (const auto& [tensor, shard] : entries) {
    const auto it = found.find(std::string_view(tensor));
    if (it == found.end() || manifest.files[it->second] != shard_paths[shard])
      fail(ErrorCode::bad_input, index_path.string(), ": weight_map puts tensor '", tensor, "' in shard '",
           shard_names[shard], "', but that shard does not contain it");
  }
}

// The file a folder stands for: its index if it has one, else its single safetensors file.
std::optional<fs::path> model_in_folder(FileSystem& file_system, const fs::path& dir) {
  for (auto names : {std::span<const std::string_view>(kIndexNames), std::span<const std::string_view>(kSingleNames)})
    for (std::string_view name : names)
      if (file_system.exists(dir / name) && !file_system.is_directory(dir / name)) return dir / name;
  return std::nullopt;
}

bool is_index_json(FileSystem& file_system, const fs::path& path) {
  const auto top = sniff_json_top(file_system, path, kMaxIndexBytes, {"weight_map"});
  return top && !top->array && top->has[0];
}

bool detect(const ModelSource& source) {
  if (source.is_directory) return model_in_folder(source.fs, source.path).has_value();
  const std::uint64_t size = source.fs.open(source.path)->size();
  if (looks_like_single_file(source.head, size)) return true;
  if (starts_json_object(source.head)) {
    if (is_index_json(source.fs, source.path)) return true;
    // Tie-break: an index file that fails to parse still belongs to this reader (precise error).
    return ends_with(source.path, ".safetensors.index.json");
  }
  // Tie-break: a damaged .safetensors (truncated, absurd header length) gets this reader's error.
  return ends_with(source.path, ".safetensors");
}

Manifest read(const ModelSource& source) {
  Manifest manifest;
  manifest.format = "safetensors";
  fs::path path = source.path;
  if (source.is_directory) {
    auto found = model_in_folder(source.fs, source.path);
    if (!found)
      fail(ErrorCode::bad_input, source.path.string(), ": folder holds neither ", kIndexNames[0], " nor ",
           kSingleNames[0]);
    path = *found;
  }
  const auto file = source.fs.open(path);
  const auto head = read_head(*file);
  TensorCaps caps(source.limits);
  if (!looks_like_single_file(head, file->size()) && starts_json_object(head))
    read_index(source.fs, path, manifest, caps);
  else read_single(source.fs, path, manifest, caps);
  return manifest;
}

}  // namespace

const FormatReader safetensors_reader{"safetensors", detect, read};

}  // namespace lwload::formats
