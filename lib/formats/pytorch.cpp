// PyTorch checkpoints as torch.save writes them since 1.6: a zip archive of stored records,
// `<archive>/data.pkl` (the pickled object) and one record `<archive>/data/<key>` per storage.
// The pickle is interpreted by the restricted unpickler (pickle_reader.hpp), which executes nothing;
// this file accepts the few globals torch writes for a state dict and turns the inert tree into
// tensors: each tensor is one piece at (record offset + storage offset × element size), so tensors
// sharing a storage (tied embeddings) are pieces into the same bytes. Nested containers (a dict of
// dicts, lists) name their tensors by joining keys with '.'.
//
// Choices:
// - A tensor whose strides are not row-major contiguous (a saved transpose) is Error(unsupported):
//   its bytes are not the tensor in the order a device expects, and lwload moves bytes, it does not
//   permute them.
// - Records must be stored (torch never compresses); `byteorder`, when present, must be "little".
// - The legacy format (torch < 1.6, a bare pickle stream) is Error(unsupported).
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "formats/format.hpp"
#include "formats/pickle_reader.hpp"
#include "formats/zip_archive.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

using pickle::Node;
using pickle::Value;
using Kind = Node::Kind;

constexpr std::uint64_t kMaxPickleBytes = 256u << 20;  // data.pkl of 10^5 tensors is a few MiB
constexpr int kMaxDepth = 64;                           // nested containers in the state dict
// Naming walks every path to a tensor, and a memoized container reached through several paths
// (tied submodules) is walked once per path: legitimate sharing costs a few times the pickle's
// nodes, a memo DAG (a list holding the level below twice, 22 levels deep) doubles per level.
constexpr std::uint64_t kVisitsPerNode = 4;
constexpr std::uint64_t kVisitsFloor = 4096;
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr std::string_view kOrderedDict = "collections.OrderedDict";

struct StorageType {
  std::string_view global;
  DType dtype;
};
// The storage classes torch.save names in its persistent ids (torch/storage.py `pickle_storage_type`).
constexpr std::array<StorageType, 12> kStorageTypes{{
    {"torch.DoubleStorage", DType::F64}, {"torch.FloatStorage", DType::F32},
    {"torch.HalfStorage", DType::F16}, {"torch.BFloat16Storage", DType::BF16},
    {"torch.LongStorage", DType::I64}, {"torch.IntStorage", DType::I32},
    {"torch.ShortStorage", DType::I16}, {"torch.CharStorage", DType::I8},
    {"torch.ByteStorage", DType::U8}, {"torch.BoolStorage", DType::BOOL},
    {"torch.ComplexFloatStorage", DType::C64}, {"torch.ComplexDoubleStorage", DType::C128},
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
  return global == kOrderedDict || global == kRebuildTensor || global == kRebuildParameter ||
         storage_type(global) != nullptr || is_script_class(global) || global.starts_with(kScriptListPrefix) ||
         global == kRestoreTypeTag;
}

class CheckpointReader {
 public:
  CheckpointReader(const RandomAccessFile& file, const std::filesystem::path& path, const HeaderLimits& limits)
      : file_(file), path_(path), zip_(file), caps_(limits) {}

  Manifest read();

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
  // `in_script_object`: inside a TorchScript module's attributes (torch.jit.save archives).
  void walk(Value value, const std::string& name, int depth, bool in_script_object = false);
  void add_tensor(Value call, const std::string& name);
  std::vector<std::int64_t> int_tuple(Value value, const std::string& what) const;
  const ZipRecord& storage_record(Value pid, const std::string& tensor, DType& dtype);

  const RandomAccessFile& file_;
  const std::filesystem::path& path_;
  ZipArchive zip_;
  std::string prefix_;  // "<archive>/"
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

Manifest CheckpointReader::read() {
  manifest_.format = "pytorch";
  manifest_.files.push_back(path_);

  // torch.save names its records "<archive>/...", archive being the file's stem by default.
  const ZipRecord* pickle_record = nullptr;
  for (const ZipRecord& record : zip_.records()) {
    const auto slash = record.name.find('/');
    if (slash != std::string::npos && record.name.substr(slash) == "/data.pkl") {
      if (pickle_record) bad("zip archive holds two data.pkl records ('", pickle_record->name, "', '", record.name, "')");
      pickle_record = &record;
    }
  }
  if (!pickle_record) bad("zip archive has no '<archive>/data.pkl' record: not a torch.save checkpoint");
  prefix_ = pickle_record->name.substr(0, pickle_record->name.size() - std::string_view("data.pkl").size());

  if (const ZipRecord* order = zip_.find(prefix_ + "byteorder")) {
    const auto bytes = record_bytes(*order, 16);
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text != "little")
      fail(ErrorCode::unsupported, path_.string(), ": checkpoint byteorder is '", text,
           "'; lwload reads little-endian checkpoints only");
  }

  const auto pickle_bytes = record_bytes(*pickle_record, kMaxPickleBytes);
  pickle::Options options;
  options.allow_global = allowed_global;
  options.is_dict_type = [](std::string_view g) { return g == kOrderedDict; };
  options.is_record_type = is_script_class;
  const pickle::Tree tree = pickle::unpickle(pickle_bytes, path_, pickle_record->name, options);
  max_visits_ = kVisitsFloor + kVisitsPerNode * tree.arena.size();
  nodes_ = tree.arena.size();
  walk(tree.root, "", 0);
  return std::move(manifest_);
}

void CheckpointReader::walk(Value value, const std::string& name, int depth, bool in_script_object) {
  if (++visits_ > max_visits_)
    bad("data.pkl: naming its tensors visits more than ", max_visits_, " objects, but the pickle holds ", nodes_,
        ": its containers are shared through the memo so that every path would be named (a reference DAG)");
  if (depth > kMaxDepth) bad("data.pkl: containers nested more than ", kMaxDepth, " deep at '", name, "'");
  const auto child = [&](const std::string& key) { return name.empty() ? key : name + "." + key; };
  switch (value->kind) {
    case Kind::dict:
      for (const auto& [key, item] : value->entries) {
        if (key->kind == Kind::string) walk(item, child(key->text), depth + 1, in_script_object);
        else if (key->kind == Kind::integer) walk(item, child(std::to_string(key->integer)), depth + 1, in_script_object);
        else if (item->kind == Kind::call || item->kind == Kind::dict || item->kind == Kind::list)
          bad("data.pkl: a key of '", name, "' is a ", pickle::kind_name(key->kind), ", not a string or int");
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
        if (args->items.empty()) bad("data.pkl: '", name, "': ", callee, " without arguments");
        walk(args->items[0], name, depth + 1, in_script_object);
      } else if (callee == kRebuildTensor) {
        add_tensor(value, name);
      } else {
        bad("data.pkl: '", name, "': ", callee, " called where a tensor or container belongs");
      }
      break;
    }
    case Kind::object:  // a TorchScript module: its attributes, named as state_dict() names them
      if (!value->items.empty()) walk(value->items[0], name, depth + 1, true);
      break;
    default:
      break;  // numbers, strings, None: metadata beside the tensors (epoch, config), not weights
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

// persistent id ('storage', torch.<Type>Storage, key, location, numel)
const ZipRecord& CheckpointReader::storage_record(Value pid, const std::string& tensor, DType& dtype) {
  const std::string what = "tensor '" + tensor + "' storage";
  if (pid->kind != Kind::persistent) bad(what, " is a ", pickle::kind_name(pid->kind), ", not a persistent id");
  const Value t = pid->items[0];
  if (t->kind != Kind::tuple || t->items.size() != 5 || t->items[0]->kind != Kind::string ||
      t->items[0]->text != "storage" || t->items[1]->kind != Kind::global || t->items[2]->kind != Kind::string)
    bad(what, ": persistent id is not ('storage', type, key, location, numel)");
  const StorageType* type = storage_type(t->items[1]->text);
  if (!type) bad(what, ": '", t->items[1]->text, "' is not a tensor storage type");
  dtype = type->dtype;
  const std::string record_name = prefix_ + "data/" + t->items[2]->text;
  const ZipRecord* record = zip_.find(record_name);
  if (!record) bad(what, ": record '", record_name, "' is missing from the archive");
  require_stored(*record);
  return *record;
}

void CheckpointReader::add_tensor(Value call, const std::string& name) {
  caps_.admit(path_, "data.pkl", name);
  const Value args = call->items[1];
  const std::string what = "tensor '" + name + "'";
  if (args->items.size() < 4) bad(what, ": _rebuild_tensor_v2 has ", args->items.size(), " arguments, needs at least 4");
  TensorInfo tensor;
  tensor.name = name;
  const ZipRecord& record = storage_record(args->items[0], name, tensor.dtype);
  if (args->items[1]->kind != Kind::integer || args->items[1]->integer < 0)
    bad(what, ": storage offset is not a non-negative int");
  const auto storage_offset = static_cast<std::uint64_t>(args->items[1]->integer);
  tensor.shape = int_tuple(args->items[2], what + " size");
  const auto stride = int_tuple(args->items[3], what + " stride");
  if (stride.size() != tensor.shape.size())
    bad(what, ": ", stride.size(), " strides for ", tensor.shape.size(), " dimensions");
  tensor.bytes = tensor_bytes(path_, name, tensor.dtype, tensor.shape);

  // Row-major contiguous: each stride is the product of the later sizes (size-1 dims may say anything).
  std::int64_t expected = 1;
  for (std::size_t d = tensor.shape.size(); d-- > 0;) {
    if (tensor.shape[d] != 1 && stride[d] != expected && tensor.bytes != 0)
      fail(ErrorCode::unsupported, path_.string(), ": ", what, " is not contiguous (dimension ", d, " has stride ",
           stride[d], ", contiguous would be ", expected,
           "); lwload moves bytes and does not permute them — save tensor.contiguous()");
    expected *= tensor.shape[d];
  }

  const std::uint64_t elem = *dtype_bytes(tensor.dtype, 1);
  if (storage_offset > record.size / elem)
    bad(what, ": storage offset ", storage_offset, " lies past its storage record '", record.name, "' (",
        record.size, " bytes)");
  const std::uint64_t begin = storage_offset * elem;
  if (tensor.bytes > record.size - begin)
    bad(what, ": bytes [", begin, ", ", begin + tensor.bytes, ") of storage record '", record.name,
        "' extend past its ", record.size, " bytes");
  if (!names_.insert(name).second) bad(what, ": the name appears twice");
  if (tensor.bytes != 0) tensor.pieces.push_back(Piece{0, record.data_offset + begin, tensor.bytes});
  manifest_.tensors.push_back(std::move(tensor));
}

bool starts_with(std::span<const std::byte> head, std::string_view magic) {
  return head.size() >= magic.size() &&
         std::equal(magic.begin(), magic.end(), head.begin(), [](char c, std::byte b) { return static_cast<std::byte>(c) == b; });
}

bool has_torch_extension(const std::filesystem::path& path) {
  const auto ext = path.extension();
  return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt";
}

// A zip archive (local header magic) — or the legacy bare pickle under a torch file name, so that
// it gets a clear `unsupported` instead of "not a model".
bool detect(const ModelSource& source) {
  if (source.is_directory) return false;
  if (starts_with(source.head, std::string_view("PK\x03\x04", 4))) return true;
  return starts_with(source.head, std::string_view("\x80\x02", 2)) && has_torch_extension(source.path);
}

Manifest read(const ModelSource& source) {
  if (starts_with(source.head, std::string_view("\x80\x02", 2)))
    fail(ErrorCode::unsupported, source.path.string(),
         ": legacy torch.save format (PyTorch < 1.6, a bare pickle stream) is not supported; re-save it with a "
         "recent torch.save");
  const auto file = source.fs.open(source.path);
  return CheckpointReader(*file, source.path, source.limits).read();
}

}  // namespace

const FormatReader pytorch_reader{"pytorch", detect, read};

}  // namespace lwload::formats
