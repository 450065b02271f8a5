// PyTorch checkpoints as torch.save writes them since 1.6: a zip archive of stored records,
// `<archive>/data.pkl` (the pickled object) and one record `<archive>/data/<key>` per storage; and
// the legacy format before it (`_use_new_zipfile_serialization=False`): pickles in a row — the
// magic number, the protocol version (1001), the system info, the object, the sorted list of
// storage keys — then each listed storage as an 8-byte element count and its bytes.
// The pickles are interpreted by the restricted unpickler (pickle_reader.hpp), which executes
// nothing; this file accepts the few globals torch writes for a state dict and turns the inert tree
// into tensors: each tensor is one piece at (storage offset in the file + storage offset × element
// size), so tensors sharing a storage (tied embeddings) are pieces into the same bytes. Nested
// containers (a dict of dicts, lists) name their tensors by joining keys with '.'.
//
// Agreement with torch.load (torch/serialization.py, the reference):
// - A storage is what the first persistent id naming its key says (torch.load resolves ids in
//   stream order and keeps the first storage per key): its dtype, and its size (numel × element
//   size), which bounds every tensor on it. A record shorter than that is refused (torch would
//   read past it).
// - A tensor whose strides are not row-major (a saved transpose, a Fortran-ordered array) is
//   Encoding::strided: its piece spans its elements and the loader copies it row-major. Strides
//   that overlap or broadcast (stride 0) are Error(unsupported).
// - Records must be stored (torch never compresses); `byteorder`, when present, must be "little".
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "formats/pytorch/pytorch.hpp"
#include "formats/header_reader.hpp"
#include "formats/pytorch/pickle_reader.hpp"
#include "formats/pytorch/zip_archive.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

using pickle::Node;
using pickle::Value;
using Kind = Node::Kind;

constexpr std::uint64_t kMaxPickleBytes = 256u << 20;  // data.pkl of 10^5 tensors is a few MiB
constexpr int kMaxDepth = 64;                          // nested containers in the state dict
// Naming walks every path to a tensor, and a memoized container reached through several paths
// (tied submodules) is walked once per path: legitimate sharing costs a few times the pickle's
// nodes, a memo DAG (a list holding the level below twice, 22 levels deep) doubles per level.
constexpr std::uint64_t kVisitsPerNode = 4;
constexpr std::uint64_t kVisitsFloor = 4096;
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildTensorV1 = "torch._utils._rebuild_tensor";  // legacy checkpoints of torch < 0.4
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr std::string_view kOrderedDict = "collections.OrderedDict";

struct StorageType {
  std::string_view global;
  DType dtype;
};
// The storage classes torch.save names in its persistent ids (torch/storage.py `pickle_storage_type`).
constexpr std::array<StorageType, 12> kStorageTypes{{
    {"torch.DoubleStorage", DType::F64},
    {"torch.FloatStorage", DType::F32},
    {"torch.HalfStorage", DType::F16},
    {"torch.BFloat16Storage", DType::BF16},
    {"torch.LongStorage", DType::I64},
    {"torch.IntStorage", DType::I32},
    {"torch.ShortStorage", DType::I16},
    {"torch.CharStorage", DType::I8},
    {"torch.ByteStorage", DType::U8},
    {"torch.BoolStorage", DType::BOOL},
    {"torch.ComplexFloatStorage", DType::C64},
    {"torch.ComplexDoubleStorage", DType::C128},
}};

const StorageType* storage_type(std::string_view global) {
  const auto it = std::find_if(kStorageTypes.begin(), kStorageTypes.end(),
                               [&](const StorageType& t) { return t.global == global; });
  return it == kStorageTypes.end() ? nullptr : &*it;
}

// TorchScript (torch.jit.save): modules are `__torch__.<qualified name>` classes, pickled as
// NEWOBJ + BUILD of their attribute dict; list attributes go through torch.jit._pickle helpers.
constexpr std::string_view kScriptClassPrefix = "__torch__.";
constexpr std::string_view kScriptListPrefix = "torch.jit._pickle.build_";  // build_intlist, build_tensorlist, ...
constexpr std::string_view kRestoreTypeTag = "torch.jit._pickle.restore_type_tag";

bool is_script_class(std::string_view global) { return global.starts_with(kScriptClassPrefix); }

bool allowed_global(std::string_view global) {
  return global == kOrderedDict || global == kRebuildTensor || global == kRebuildTensorV1 ||
         global == kRebuildParameter || storage_type(global) != nullptr || is_script_class(global) ||
         global.starts_with(kScriptListPrefix) || global == kRestoreTypeTag;
}

// A storage as torch.load makes it: from the first persistent id naming its key.
struct Storage {
  DType dtype{};
  std::string type;          // "torch.FloatStorage"
  std::uint64_t bytes = 0;   // numel × element size: what torch allocates and bounds tensors by
  std::uint64_t offset = 0;  // where its bytes start in the file
  std::string where;         // for messages: "record 'archive/data/0'" or "legacy storage '…'"
  bool located = false;      // legacy: its bytes were found after the key list
};

// The legacy format's magic number pickle: PROTO 2-5, maybe a FRAME, LONG1 of the 10 bytes of
// 0x1950a86a20f9469cfc6c, STOP. The offset past it; nullopt when `data` ends first or is no such pickle.
constexpr std::array<unsigned char, 10> kLegacyMagic{0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
std::optional<std::size_t> legacy_magic_end(std::span<const std::byte> data) {
  const auto at = [&](std::size_t i) { return std::to_integer<unsigned>(data[i]); };
  std::size_t pos = 2;
  if (data.size() < 2 || at(0) != 0x80 || at(1) < 2 || at(1) > 5) return std::nullopt;
  if (data.size() > pos && at(pos) == 0x95) pos += 9;
  if (data.size() < pos + 13 || at(pos) != 0x8a || at(pos + 1) != 10) return std::nullopt;
  for (std::size_t i = 0; i < kLegacyMagic.size(); ++i)
    if (at(pos + 2 + i) != kLegacyMagic[i]) return std::nullopt;
  if (at(pos + 12) != '.') return std::nullopt;
  return pos + 13;
}

// What a TorchScript class's source (code/__torch__/...py) says of its attributes: a Module lists
// its parameters and buffers (`__parameters__ = ["weight", ]`, `__buffers__ = [...]`), and only those,
// and its submodules, are in state_dict().
struct ScriptClass {
  bool known = false;                     // its source was found and names the class
  bool module = false;                    // `class X(Module):`
  std::unordered_set<std::string> state;  // parameters and buffers
};

// The names in a line `  __parameters__ = ["a", "b", ]`.
void add_listed_names(std::string_view line, std::unordered_set<std::string>& out) {
  for (std::size_t at = line.find('"'); at != std::string_view::npos;) {
    const std::size_t end = line.find('"', at + 1);
    if (end == std::string_view::npos) break;
    out.emplace(line.substr(at + 1, end - at - 1));
    at = line.find('"', end + 1);
  }
}

// The classes defined in one code/ file, by name.
std::unordered_map<std::string, ScriptClass> parse_script_classes(std::string_view source) {
  std::unordered_map<std::string, ScriptClass> out;
  ScriptClass* current = nullptr;
  while (!source.empty()) {
    const std::size_t newline = source.find('\n');
    const std::string_view line = source.substr(0, newline);
    source = newline == std::string_view::npos ? std::string_view() : source.substr(newline + 1);
    if (line.starts_with("class ")) {
      const std::size_t paren = line.find('(');
      const std::string_view name =
          line.substr(6, paren == std::string_view::npos ? std::string_view::npos : paren - 6);
      current = &out[std::string(name.substr(0, name.find(':')))];
      current->known = true;
      current->module = line.find("(Module)") != std::string_view::npos;
    } else if (current && (line.starts_with("  __parameters__ = [") || line.starts_with("  __buffers__ = ["))) {
      add_listed_names(line, current->state);
    } else if (!line.empty() && line.front() != ' ') {
      current = nullptr;
    }
  }
  return out;
}

class CheckpointReader {
 public:
  CheckpointReader(const RandomAccessFile& file, const std::filesystem::path& path, const HeaderLimits& limits)
      : file_(file), path_(path), caps_(limits) {}

  Manifest read_zip();
  Manifest read_legacy();

 private:
  template <typename... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail(ErrorCode::bad_input, path_.string(), ": ", parts...);
  }
  std::vector<std::byte> record_bytes(const ZipRecord& record, std::uint64_t limit) const;
  // A record lwload needs must lie in the file as it is (code/ records may be compressed; they are
  // never read).
  void require_stored(const ZipRecord& record) const {
    if (!record.stored)
      fail(ErrorCode::unsupported, path_.string(), ": zip record '", record.name,
           "' is compressed; lwload maps stored records only (torch.save and torch.jit.save store tensor data)");
  }
  pickle::Options options() const;
  void name_tensors(const pickle::Tree& tree);
  // `in_script_object`: inside a TorchScript module's attributes (torch.jit.save archives).
  void walk(Value value, const std::string& name, int depth, bool in_script_object = false);
  void add_tensor(Value call, const std::string& name);
  std::vector<std::int64_t> int_tuple(Value value, const std::string& what) const;
  // Every persistent id in stream order, as torch.load resolves them: the first naming a key makes
  // its storage.
  void resolve_storages(const pickle::Tree& tree);
  const Storage& storage_of(Value pid, const std::string& tensor) const;
  const ScriptClass& script_class(const std::string& qualified);
  void walk_script_object(Value object, const std::string& name, int depth);
  void locate_legacy_storages(Value keys, std::uint64_t offset);

  const RandomAccessFile& file_;
  const std::filesystem::path& path_;
  std::optional<ZipArchive> zip_;
  bool legacy_ = false;
  std::string pickle_name_ = "data.pkl";  // for messages
  std::string prefix_;                    // "<archive>/"
  std::unordered_map<std::string, Storage> storages_;
  std::unordered_map<std::string, std::unordered_map<std::string, ScriptClass>> code_files_;  // by record name
  std::unordered_map<std::string, ScriptClass> classes_;                                      // by qualified name
  std::uint64_t code_bytes_ = 0;
  std::uint64_t visits_ = 0;
  std::uint64_t max_visits_ = 0;
  std::uint64_t nodes_ = 0;
  std::unordered_set<std::string> names_;
  TensorCaps caps_;
  Manifest manifest_;
};

std::vector<std::byte> CheckpointReader::record_bytes(const ZipRecord& record, std::uint64_t limit) const {
  require_stored(record);
  if (record.size > limit)
    fail(ErrorCode::unsupported, path_.string(), ": zip record '", record.name, "' of ", record.size,
         " bytes exceeds lwload's limit of ", limit, " bytes");
  std::vector<std::byte> bytes(static_cast<std::size_t>(record.size));
  file_.read_exact(record.data_offset, bytes, "zip record '" + record.name + "'");
  return bytes;
}

pickle::Options CheckpointReader::options() const {
  pickle::Options options;
  options.allow_global = allowed_global;
  options.is_dict_type = [](std::string_view g) { return g == kOrderedDict; };
  options.is_record_type = is_script_class;
  return options;
}

void CheckpointReader::name_tensors(const pickle::Tree& tree) {
  max_visits_ = kVisitsFloor + kVisitsPerNode * tree.arena.size();
  nodes_ = tree.arena.size();
  walk(tree.root, "", 0);
}

Manifest CheckpointReader::read_zip() {
  manifest_.format = "pytorch";
  manifest_.files.push_back(path_);
  zip_.emplace(file_);

  // torch.save names its records "<archive>/...", archive being the file's stem by default.
  const ZipRecord* pickle_record = nullptr;
  for (const ZipRecord& record : zip_->records()) {
    const auto slash = record.name.find('/');
    if (slash != std::string::npos && record.name.substr(slash) == "/data.pkl") {
      if (pickle_record)
        bad("zip archive holds two data.pkl records ('", pickle_record->name, "', '", record.name, "')");
      pickle_record = &record;
    }
  }
  if (!pickle_record) bad("zip archive has no '<archive>/data.pkl' record: not a torch.save checkpoint");
  prefix_ = pickle_record->name.substr(0, pickle_record->name.size() - std::string_view("data.pkl").size());

  if (const ZipRecord* order = zip_->find(prefix_ + "byteorder")) {
    const auto bytes = record_bytes(*order, 16);
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text != "little")
      fail(ErrorCode::unsupported, path_.string(), ": checkpoint byteorder is '", text,
           "'; lwload reads little-endian checkpoints only");
  }

  const auto pickle_bytes = record_bytes(*pickle_record, kMaxPickleBytes);
  const pickle::Tree tree = pickle::unpickle(pickle_bytes, path_, pickle_record->name, options());
  resolve_storages(tree);
  name_tensors(tree);
  return std::move(manifest_);
}

// torch/serialization.py `_legacy_load`: five pickles, then the storages in the key list's order.
// The pickles are read from a prefix of the file that doubles until they all end inside it.
Manifest CheckpointReader::read_legacy() {
  manifest_.format = "pytorch";
  manifest_.files.push_back(path_);
  manifest_.metadata.push_back(
      MetaEntry{"pytorch.serialization", MetaValue{std::string("legacy (before PyTorch 1.6)")}});
  legacy_ = true;
  pickle_name_ = "the legacy pickle";
  const std::uint64_t size = file_.size();
  const pickle::Options none;  // the header pickles hold plain values: no global at all
  const pickle::Options object = options();
  std::uint64_t want = std::min<std::uint64_t>(size, std::uint64_t{1} << 20);
  for (;;) {
    std::vector<std::byte> head(static_cast<std::size_t>(want));
    file_.read_exact(0, head, "legacy torch.save pickles");
    const std::span<const std::byte> all(head);
    const auto magic_end = legacy_magic_end(all);
    if (!magic_end) bad("not a legacy torch.save file: it does not start with the magic number pickle");
    std::size_t pos = *magic_end;
    const auto next = [&](std::string_view what, const pickle::Options& o) {
      auto tree = pickle::unpickle_prefix(all.subspan(pos), path_, what, o);
      if (tree) pos += tree->end;
      return tree;
    };
    auto protocol = next("the legacy protocol version pickle", none);
    auto sys_info = protocol ? next("the legacy system info pickle", none) : std::nullopt;
    auto tree = sys_info ? next("the legacy object pickle", object) : std::nullopt;
    auto keys = tree ? next("the legacy storage key pickle", none) : std::nullopt;
    if (!keys) {
      if (want == size) bad("the legacy pickles run past the end of the file (truncated?)");
      if (want >= kMaxPickleBytes)
        fail(ErrorCode::unsupported, path_.string(), ": the legacy pickles exceed lwload's limit of ", kMaxPickleBytes,
             " bytes");
      want = std::min({size, want * 2, kMaxPickleBytes});
      continue;
    }
    if (protocol->root->kind != Kind::integer || protocol->root->integer != 1001)
      bad("the legacy protocol version is not 1001 (torch.load refuses any other)");
    if (sys_info->root->kind != Kind::dict)
      bad("the legacy system info is a ", pickle::kind_name(sys_info->root->kind), ", not a dict");
    for (const auto& [key, value] : sys_info->root->entries)
      if (key->kind == Kind::string && key->text == "little_endian" &&
          (value->kind != Kind::boolean || value->integer != 1))
        fail(ErrorCode::unsupported, path_.string(),
             ": the checkpoint was saved on a big-endian machine; lwload reads "
             "little-endian checkpoints only");
    resolve_storages(*tree);
    locate_legacy_storages(keys->root, pos);
    name_tensors(*tree);
    return std::move(manifest_);
  }
}

void CheckpointReader::resolve_storages(const pickle::Tree& tree) {
  for (const Value pid : tree.persistent) {
    const Value t = pid->items[0];
    const std::size_t fields = legacy_ ? 6 : 5;
    if (t->kind == Kind::tuple && !t->items.empty() && t->items[0]->kind == Kind::string &&
        t->items[0]->text == "module")
      fail(ErrorCode::unsupported, path_.string(), ": ", pickle_name_,
           " pickles a whole module (its source code); lwload reads tensors, save the state_dict()");
    if (t->kind != Kind::tuple || t->items.size() != fields || t->items[0]->kind != Kind::string ||
        t->items[0]->text != "storage" || t->items[1]->kind != Kind::global || t->items[2]->kind != Kind::string ||
        t->items[4]->kind != Kind::integer || t->items[4]->integer < 0)
      bad(pickle_name_, ": a persistent id is not ('storage', type, key, location, numel", legacy_ ? ", view)" : ")");
    if (legacy_ && t->items[5]->kind != Kind::none)
      fail(ErrorCode::unsupported, path_.string(), ": ", pickle_name_, ": storage '", t->items[2]->text,
           "' is a view of another storage (torch < 1.0); lwload does not read storage views");
    const StorageType* type = storage_type(t->items[1]->text);
    if (!type) bad(pickle_name_, ": '", t->items[1]->text, "' is not a tensor storage type");
    const std::string& key = t->items[2]->text;
    if (storages_.contains(key)) continue;  // torch.load keeps the first storage made for a key
    const std::uint64_t elem = *dtype_bytes(type->dtype, 1);
    const auto numel = static_cast<std::uint64_t>(t->items[4]->integer);
    if (numel > std::numeric_limits<std::uint64_t>::max() / elem)
      bad(pickle_name_, ": storage '", key, "' of ", numel, " elements overflows 64 bits");
    Storage storage{type->dtype, std::string(type->global), numel * elem, 0, {}, false};
    if (!legacy_) {
      // torch.load reads the record as soon as it meets the id, and wraps numel × element size bytes of it.
      const std::string record_name = prefix_ + "data/" + key;
      const ZipRecord* record = zip_->find(record_name);
      if (!record) bad(pickle_name_, ": storage '", key, "': record '", record_name, "' is missing from the archive");
      require_stored(*record);
      if (record->size < storage.bytes)
        bad(pickle_name_, ": storage '", key, "' is ", numel, " ", type->global, " elements (", storage.bytes,
            " bytes) but its record '", record_name, "' holds ", record->size, " bytes");
      storage.offset = record->data_offset;
      storage.where = "record '" + record_name + "'";
      storage.located = true;
    }
    storages_.emplace(key, std::move(storage));
  }
}

// The storages follow the key list, each an 8-byte element count (which must agree with the
// persistent id: torch.load checks it) and its bytes.
void CheckpointReader::locate_legacy_storages(Value keys, std::uint64_t offset) {
  if (keys->kind != Kind::list) bad("the legacy storage key list is a ", pickle::kind_name(keys->kind), ", not a list");
  for (const Value item : keys->items) {
    if (item->kind != Kind::string) bad("the legacy storage key list holds a ", pickle::kind_name(item->kind));
    const auto it = storages_.find(item->text);
    if (it == storages_.end())
      bad("the legacy storage key list names storage '", item->text, "', which no persistent id made");
    Storage& storage = it->second;
    if (storage.located)
      bad("the legacy storage key list names storage '", item->text,
          "' twice (torch.load would read its bytes twice, keeping the second)");
    const std::string what = "legacy storage '" + item->text + "'";
    check_extent(path_, what + " element count", offset, 8, file_.size());
    std::array<std::byte, 8> count;
    file_.read_exact(offset, count, what + " element count");
    const std::uint64_t elem = *dtype_bytes(storage.dtype, 1);
    const auto numel = load_le<std::uint64_t>(count.data());
    if (numel != storage.bytes / elem)
      bad(what, " at offset ", offset, " holds ", numel, " elements but its persistent id says ", storage.bytes / elem,
          " (torch.load refuses the mismatch)");
    check_extent(path_, what, offset + 8, storage.bytes, file_.size());
    storage.offset = offset + 8;
    storage.where = what + " at offset " + std::to_string(offset + 8);
    storage.located = true;
    offset += 8 + storage.bytes;
  }
  for (const auto& [key, storage] : storages_)
    if (!storage.located)
      bad("storage '", key, "' is used but not in the legacy storage key list: its bytes are not in the file");
}

void CheckpointReader::walk(Value value, const std::string& name, int depth, bool in_script_object) {
  if (++visits_ > max_visits_)
    bad(pickle_name_, ": naming its tensors visits more than ", max_visits_, " objects, but the pickle holds ", nodes_,
        ": its containers are shared through the memo so that every path would be named (a reference DAG)");
  if (depth > kMaxDepth) bad(pickle_name_, ": containers nested more than ", kMaxDepth, " deep at '", name, "'");
  const auto child = [&](const std::string& key) { return name.empty() ? key : name + "." + key; };
  switch (value->kind) {
    case Kind::dict:
      for (const auto& [key, item] : value->entries) {
        if (key->kind == Kind::string) walk(item, child(key->text), depth + 1, in_script_object);
        else if (key->kind == Kind::integer)
          walk(item, child(std::to_string(key->integer)), depth + 1, in_script_object);
        else if (item->kind == Kind::call || item->kind == Kind::dict || item->kind == Kind::list)
          bad(pickle_name_, ": a key of '", name, "' is a ", pickle::kind_name(key->kind), ", not a string or int");
      }
      break;
    case Kind::list:
    case Kind::tuple:
      if (in_script_object) {
        // A TorchScript list attribute (an LSTM's _flat_weights) holds no parameter or buffer —
        // those are attributes of their own — and state_dict() leaves it out; so does lwload, saying so.
        manifest_.metadata.push_back(MetaEntry{"torchscript.list_attribute_not_loaded." + name,
                                               MetaValue{static_cast<std::int64_t>(value->items.size())}});
        break;
      }
      for (std::size_t i = 0; i < value->items.size(); ++i)
        walk(value->items[i], child(std::to_string(i)), depth + 1, in_script_object);
      break;
    case Kind::call: {
      const std::string& callee = value->items[0]->text;
      if (callee == kRebuildParameter || callee.starts_with(kScriptListPrefix) || callee == kRestoreTypeTag) {
        // A parameter, a TorchScript list or a tagged value: what matters is the first argument.
        const Value args = value->items[1];
        if (args->items.empty()) bad(pickle_name_, ": '", name, "': ", callee, " without arguments");
        walk(args->items[0], name, depth + 1, in_script_object);
      } else if (callee == kRebuildTensor || callee == kRebuildTensorV1) {
        add_tensor(value, name);
      } else {
        bad(pickle_name_, ": '", name, "': ", callee, " called where a tensor or container belongs");
      }
      break;
    }
    case Kind::object:  // a TorchScript module: its attributes, named as state_dict() names them
      walk_script_object(value, name, depth);
      break;
    default: break;  // numbers, strings, None: metadata beside the tensors (epoch, config), not weights
  }
}

// The class's source is code/<qualifier as a path>.py of the archive (`__torch__.a.b.C`: class C
// of code/__torch__/a/b.py), read once per file; a class whose source is not there is unknown.
const ScriptClass& CheckpointReader::script_class(const std::string& qualified) {
  const auto found = classes_.find(qualified);
  if (found != classes_.end()) return found->second;
  ScriptClass& cls = classes_[qualified];
  const std::size_t dot = qualified.rfind('.');
  if (dot == std::string::npos || !zip_) return cls;
  std::string file = qualified.substr(0, dot);
  std::replace(file.begin(), file.end(), '.', '/');
  file = prefix_ + "code/" + file + ".py";
  auto parsed = code_files_.find(file);
  if (parsed == code_files_.end()) {
    std::unordered_map<std::string, ScriptClass> classes;
    if (const ZipRecord* record = zip_->find(file)) {
      // Sources are a few kilobytes; all of them together are held to the archive's size + 64 MiB.
      const std::uint64_t budget = file_.size() + (std::uint64_t{64} << 20);
      if (record->uncompressed > budget - std::min(budget, code_bytes_))
        fail(ErrorCode::unsupported, path_.string(), ": TorchScript sources inflate to more than ", budget, " bytes");
      const auto bytes = read_record(file_, *record, budget - code_bytes_);
      code_bytes_ += bytes.size();
      classes = parse_script_classes(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    parsed = code_files_.emplace(file, std::move(classes)).first;
  }
  const auto it = parsed->second.find(qualified.substr(dot + 1));
  if (it != parsed->second.end()) cls = it->second;
  return cls;
}

// A TorchScript object's attributes as state_dict() sees them: a Module's parameters and buffers
// are tensors, its other tensor attributes (silero VAD's `_state`, `_context`) are metadata, and
// objects below it are walked by their own class. An object whose class source is missing keeps
// every tensor attribute (nothing tells them apart).
void CheckpointReader::walk_script_object(Value object, const std::string& name, int depth) {
  if (object->items.empty()) return;
  const Value state = object->items[0];
  const ScriptClass& cls = script_class(object->text);
  if (!cls.known || state->kind != Kind::dict) {
    walk(state, name, depth + 1, true);
    return;
  }
  if (!cls.module) {  // a TorchScript class, not a Module: state_dict() does not look inside
    manifest_.metadata.push_back(MetaEntry{"torchscript.object_not_in_state_dict." + name, MetaValue{object->text}});
    return;
  }
  for (const auto& [key, item] : state->entries) {
    if (key->kind != Kind::string) continue;
    const std::string path = name.empty() ? key->text : name + "." + key->text;
    if (item->kind == Kind::object || cls.state.contains(key->text)) {
      walk(item, path, depth + 1, true);
    } else if (item->kind == Kind::call &&
               (item->items[0]->text == kRebuildTensor || item->items[0]->text == kRebuildParameter)) {
      std::string shape;
      const Value args = item->items[1];
      const Value tensor_args =
          item->items[0]->text == kRebuildParameter && !args->items.empty() && args->items[0]->kind == Kind::call
              ? args->items[0]->items[1]
              : args;
      if (tensor_args->items.size() > 2 && tensor_args->items[2]->kind == Kind::tuple)
        for (const Value d : tensor_args->items[2]->items)
          shape += (shape.empty() ? "" : ",") + std::to_string(d->integer);
      manifest_.metadata.push_back(
          MetaEntry{"torchscript.attribute_not_in_state_dict." + path, MetaValue{"tensor [" + shape + "]"}});
    } else if (item->kind == Kind::dict) {
      manifest_.metadata.push_back(MetaEntry{"torchscript.attribute_not_in_state_dict." + path,
                                             MetaValue{"dict of " + std::to_string(item->entries.size())}});
    } else {
      walk(item, path, depth + 1, true);  // a list (said in the metadata), or a number or string (skipped)
    }
  }
}

std::vector<std::int64_t> CheckpointReader::int_tuple(Value value, const std::string& what) const {
  if (value->kind != Kind::tuple) bad(what, " is a ", pickle::kind_name(value->kind), ", not a tuple");
  if (value->items.size() > kMaxRank) bad(what, " has ", value->items.size(), " dimensions (at most ", kMaxRank, ")");
  std::vector<std::int64_t> out;
  for (const Value item : value->items) {
    if (item->kind != Kind::integer) bad(what, " holds a ", pickle::kind_name(item->kind), ", not an int");
    out.push_back(item->integer);
  }
  return out;
}

const Storage& CheckpointReader::storage_of(Value pid, const std::string& tensor) const {
  if (pid->kind != Kind::persistent)
    bad("tensor '", tensor, "' storage is a ", pickle::kind_name(pid->kind), ", not a persistent id");
  return storages_.at(pid->items[0]->items[2]->text);  // every persistent id was resolved
}

void CheckpointReader::add_tensor(Value call, const std::string& name) {
  caps_.admit(path_, pickle_name_, name);
  const Value args = call->items[1];
  const std::string what = "tensor '" + name + "'";
  if (args->items.size() < 4)
    bad(what, ": ", call->items[0]->text, " has ", args->items.size(), " arguments, needs at least 4");
  TensorInfo tensor;
  tensor.name = name;
  const Storage& storage = storage_of(args->items[0], name);
  tensor.dtype = storage.dtype;  // the storage's (the first id naming its key), as torch.load's tensor
  if (args->items[1]->kind != Kind::integer || args->items[1]->integer < 0)
    bad(what, ": storage offset is not a non-negative int");
  const auto storage_offset = static_cast<std::uint64_t>(args->items[1]->integer);
  tensor.shape = int_tuple(args->items[2], what + " size");
  const auto stride = int_tuple(args->items[3], what + " stride");
  if (stride.size() != tensor.shape.size())
    bad(what, ": ", stride.size(), " strides for ", tensor.shape.size(), " dimensions");
  tensor.bytes = tensor_bytes(path_, name, tensor.dtype, tensor.shape);
  const std::uint64_t elem = *dtype_bytes(tensor.dtype, 1);

  // Row-major contiguous: each stride is the product of the later sizes (size-1 dims may say anything).
  bool contiguous = true;
  std::int64_t expected = 1;
  for (std::size_t d = tensor.shape.size(); d-- > 0;) {
    if (tensor.shape[d] != 1 && stride[d] != expected) contiguous = false;
    expected *= tensor.shape[d];
  }
  // Elements spanned in the storage: all of them when contiguous, else up to the last one the
  // strides reach — accepted when no two elements share a place (dimensions ordered by stride,
  // each stride at least the extent of the ones below it: transposes, Fortran order, slices).
  std::uint64_t span = tensor.bytes / elem;
  if (!contiguous && tensor.bytes != 0) {
    std::vector<std::size_t> dims;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d)
      if (tensor.shape[d] != 1) dims.push_back(d);
    std::sort(dims.begin(), dims.end(), [&](std::size_t a, std::size_t b) { return stride[a] < stride[b]; });
    std::uint64_t extent = 1;  // elements spanned by the dimensions so far
    for (const std::size_t d : dims) {
      if (stride[d] < 0 || static_cast<std::uint64_t>(stride[d]) < extent)
        fail(ErrorCode::unsupported, path_.string(), ": ", what, " has strides (", stride.size(), " dims, dimension ",
             d, " stride ", stride[d],
             ") under which elements overlap or repeat (a broadcast or as_strided view); "
             "lwload loads each stored element once — save tensor.contiguous()");
      const auto step = static_cast<std::uint64_t>(stride[d]), count = static_cast<std::uint64_t>(tensor.shape[d] - 1);
      if (step != 0 && count > (std::numeric_limits<std::uint64_t>::max() - extent) / step)
        bad(what, ": its strides overflow 64 bits");
      extent += count * step;
    }
    span = extent;
  }

  if (storage_offset > storage.bytes / elem)
    bad(what, ": storage offset ", storage_offset, " lies past its storage ", storage.where, " (", storage.bytes,
        " bytes)");
  const std::uint64_t begin = storage_offset * elem;
  if (span > (storage.bytes - begin) / elem)
    bad(what, ": elements [", storage_offset, ", +", span, ") of its storage ", storage.where, " extend past its ",
        storage.bytes / elem, " ", dtype_name(tensor.dtype), " elements");
  if (!names_.insert(name).second) bad(what, ": the name appears twice");
  if (tensor.bytes != 0) tensor.pieces.push_back(Piece{0, storage.offset + begin, span * elem});
  if (!contiguous && tensor.bytes != 0) {
    tensor.encoding = Encoding::strided;
    tensor.strides = std::make_shared<const std::vector<std::int64_t>>(stride);
  }
  manifest_.tensors.push_back(std::move(tensor));
}

bool starts_with(std::span<const std::byte> head, std::string_view magic) {
  return head.size() >= magic.size() && std::equal(magic.begin(), magic.end(), head.begin(),
                                                   [](char c, std::byte b) { return static_cast<std::byte>(c) == b; });
}

bool has_torch_extension(const std::filesystem::path& path) {
  const auto ext = path.extension();
  return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt";
}

// A zip archive (local header magic), a legacy torch.save file (its magic number pickle), or a
// bare pickle under a torch file name, so that it hears why it is not a checkpoint.
bool detect(const ModelSource& source) {
  if (source.is_directory) return false;
  if (starts_with(source.head, std::string_view("PK\x03\x04", 4))) return true;
  if (legacy_magic_end(source.head)) return true;
  return starts_with(source.head, std::string_view("\x80\x02", 2)) && has_torch_extension(source.path);
}

Manifest read(const ModelSource& source) {
  const auto file = source.fs.open(source.path);
  CheckpointReader reader(*file, source.path, source.limits);
  if (starts_with(source.head, std::string_view("\x80", 1))) return reader.read_legacy();
  return reader.read_zip();
}

}  // namespace

const FormatReader pytorch_reader{"pytorch", detect, read};

}  // namespace lwload::formats
