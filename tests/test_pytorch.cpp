// The PyTorch checkpoint reader against the real writer: Debian's python3-torch (through
// /usr/bin/python3) saves state dicts in the test and torch.load gives the reference names, dtypes,
// shapes and bytes. Malformed archives are cut or patched from torch-written ones, or built by hand
// where torch cannot write them (ZIP64 records, compressed or encrypted records, overflowing sizes).
// Checkpoints that ask to run code are refused, and a marker file proves nothing ran.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "formats/decode/encoded.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;
using lwload::test::TempDir;

namespace {

// Writes the checkpoints into argv[1]: every dtype, tied embeddings (one storage, two tensors),
// views with a storage offset, nested containers, a transpose, and two that ask to run code.
constexpr const char* kWriter = R"PY(
import os, sys, builtins, torch
out = sys.argv[1]
torch.manual_seed(7)
def ramp(n, dtype):
    if dtype == torch.bool: return torch.arange(n) % 3 == 0
    if dtype.is_complex: return torch.complex(torch.randn(n), torch.randn(n)).to(dtype)
    if dtype.is_floating_point: return torch.randn(n).to(dtype)
    return (torch.arange(n) * 37 - 50).to(dtype)
dtypes = {'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16, 'f64': torch.float64,
          'i64': torch.int64, 'i32': torch.int32, 'i16': torch.int16, 'i8': torch.int8, 'u8': torch.uint8,
          'bool': torch.bool, 'c64': torch.complex64, 'c128': torch.complex128}
sd = {k: ramp(24, d).reshape(2, 3, 4) for k, d in dtypes.items()}
sd['scalar'] = torch.tensor(3.5)
sd['empty'] = torch.zeros(0, 4)
torch.save(sd, os.path.join(out, 'dtypes.pt'))

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.lm_head = torch.nn.Linear(8, 16, bias=False)
        self.lm_head.weight = self.embed.weight
torch.save(Tied().state_dict(), os.path.join(out, 'tied.pt'))

base = torch.arange(100, dtype=torch.float32)
torch.save({'head': base[:10], 'middle': base[10:30], 'grid': base[40:60].view(4, 5), 'row': base.view(10, 10)[7]},
           os.path.join(out, 'views.pt'))

torch.save({'model': {'layer': {'w': torch.randn(3, 2), 'b': torch.randn(2)}},
            'optimizer': {'state': {0: {'exp_avg': torch.randn(3, 2), 'step': torch.tensor(5.0)}},
                          'param_groups': [{'lr': 0.1, 'params': [0]}]},
            'epoch': 3, 'history': [torch.ones(2), torch.zeros(3, dtype=torch.int64)], 'name': 'run-1'},
           os.path.join(out, 'nested.pt'))

torch.save({'t': torch.randn(3, 4).t()}, os.path.join(out, 'transpose.pt'))

class System:
    def __reduce__(self): return (os.system, ('touch ' + os.path.join(out, 'ran-system'),))
class Eval:
    def __reduce__(self): return (builtins.eval, ("open(%r, 'w')" % os.path.join(out, 'ran-eval'),))
torch.save({'w': torch.ones(2), 'x': System()}, os.path.join(out, 'system.pt'))
torch.save({'w': torch.ones(2), 'x': Eval()}, os.path.join(out, 'eval.pt'))

# Legacy (before 1.6) files: every dtype, views and tied storages, and one that asks to run code.
legacy = dict(_use_new_zipfile_serialization=False)
torch.save(sd, os.path.join(out, 'legacy_dtypes.pt'), **legacy)
tied = torch.randn(4, 3)
torch.save({'head': base[:10], 'grid': base[40:60].view(4, 5), 'a': tied, 'b': tied, 'n': 7},
           os.path.join(out, 'legacy_views.bin'), **legacy)
torch.save({'w': torch.ones(2), 'x': System()}, os.path.join(out, 'legacy_system.pt'), **legacy)
torch.save({'head': base[:10], 'a': tied}, os.path.join(out, 'legacy_protocol4.pt'), pickle_protocol=4, **legacy)

# Not row-major: a transpose, Fortran order, a step slice, a permutation, a column slice; and a broadcast.
import numpy as np
strided = {'t': torch.randn(3, 4).t(), 'fortran': torch.from_numpy(np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))),
           'step': torch.arange(20, dtype=torch.int16)[::3], 'perm': torch.randn(2, 3, 4, 5).permute(2, 0, 3, 1),
           'col': torch.randn(5, 6, dtype=torch.float64)[:, 2:4], 'plain': torch.arange(6)}
torch.save(strided, os.path.join(out, 'strided.pt'))
torch.save(strided, os.path.join(out, 'legacy_strided.pt'), **legacy)
torch.save({'e': torch.ones(1).expand(4)}, os.path.join(out, 'broadcast.pt'))

# One storage key under two storage types: torch.load keeps the first.
import zipfile
def patch_pickle(src, dst, old, new):
    zin, zout = zipfile.ZipFile(src), zipfile.ZipFile(dst, 'w')
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith('/data.pkl'):
            assert data.count(old) == 1
            data = data.replace(old, new)
        zout.writestr(info, data)
    zout.close()
torch.save({'a': torch.arange(3, dtype=torch.float32), 'b': torch.arange(3, dtype=torch.int32) + 7},
           os.path.join(out, 'twotypes_src.pt'))
patch_pickle(os.path.join(out, 'twotypes_src.pt'), os.path.join(out, 'twotypes.pt'), b'X\x01\x00\x00\x001', b'X\x01\x00\x00\x000')

# BUILD onto a rebuilt tensor: torch.load hands the state to Tensor.__setstate__ (set_: another storage).
import collections
class Rebuilt:
    def __reduce_ex__(self, proto):
        first, second = torch.zeros(3), torch.ones(3)
        return (torch._utils._rebuild_tensor_v2, (first.storage(), 0, (3,), (1,), False, collections.OrderedDict()),
                (second.storage(), 0, (3,), (1,)))
torch.save({'w': Rebuilt()}, os.path.join(out, 'build.pt'))
)PY";

// One line per tensor of torch.load(argv[1]): name dtype dims(comma) hex-bytes. Nested names join
// keys with '.', as lwload names them.
constexpr const char* kReference = R"PY(
import sys, torch
names = {torch.float32: 'F32', torch.float16: 'F16', torch.bfloat16: 'BF16', torch.float64: 'F64',
         torch.int64: 'I64', torch.int32: 'I32', torch.int16: 'I16', torch.int8: 'I8', torch.uint8: 'U8',
         torch.bool: 'BOOL', torch.complex64: 'C64', torch.complex128: 'C128'}
def walk(obj, name):
    if isinstance(obj, torch.Tensor):
        data = obj.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex()
        print(name, names[obj.dtype], ','.join(str(d) for d in obj.shape) or '-', data or '-')
    elif isinstance(obj, dict):
        for k, v in obj.items(): walk(v, f'{name}.{k}' if name else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj): walk(v, f'{name}.{i}' if name else str(i))
walk(torch.load(sys.argv[1], map_location='cpu'), '')
)PY";

struct RefTensor {
  std::string dtype, shape, hex;
};

std::string hex_of(const std::vector<std::byte>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += digits[std::to_integer<int>(b) >> 4];
    out += digits[std::to_integer<int>(b) & 15];
  }
  return out;
}

// The checkpoints, written once per process (torch's import costs seconds).
const fs::path& checkpoints() {
  static TempDir dir;
  static const bool written = [] {
    test::write_file(dir / "make.py", std::string_view(kWriter));
    test::write_file(dir / "ref.py", std::string_view(kReference));
    return test::run_command(str(test::kPython, " ", (dir / "make.py").string(), " ", dir.path().string())) == 0;
  }();
  REQUIRE(written);
  return dir.path();
}

std::map<std::string, RefTensor> reference(const fs::path& file) {
  std::string out;
  REQUIRE(test::run_command(str(test::kPython, " ", (checkpoints() / "ref.py").string(), " ", file.string()), &out) ==
          0);
  std::map<std::string, RefTensor> ref;
  std::istringstream lines(out);
  std::string name;
  RefTensor t;
  while (lines >> name >> t.dtype >> t.shape >> t.hex) ref[name] = t;
  return ref;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out.empty() ? "-" : out;
}

// The tensor's bytes as a device gets them (an encoded tensor decoded, as the loader does).
std::vector<std::byte> tensor_data(const Manifest& m, const TensorInfo& t) {
  std::vector<std::byte> bytes;
  for (const Piece& p : t.pieces) {
    const auto part = test::read_range(m.files[p.file], p.offset, p.length);
    bytes.insert(bytes.end(), part.begin(), part.end());
  }
  if (t.encoding == Encoding::raw) return bytes;
  std::vector<std::byte> decoded(t.bytes);
  formats::decode_tensor(t, bytes, decoded, m.files[0]);
  return decoded;
}

// The manifest matches torch.load tensor for tensor: names, dtypes, shapes and bytes.
void check_against_torch(const fs::path& file) {
  const Manifest m = open_manifest(file);
  CHECK(m.format == "pytorch");
  const auto ref = reference(file);
  REQUIRE(ref.size() == m.tensors.size());
  for (const TensorInfo& t : m.tensors) {
    CAPTURE(t.name);
    const auto it = ref.find(t.name);
    REQUIRE(it != ref.end());
    CHECK(std::string(dtype_name(t.dtype)) == it->second.dtype);
    CHECK(shape_text(t.shape) == it->second.shape);
    const std::string hex = hex_of(tensor_data(m, t));
    CHECK((hex.empty() ? std::string("-") : hex) == it->second.hex);
  }
}

ErrorCode error_of(const fs::path& file, std::string* message) {
  try {
    (void)open_manifest(file);
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  FAIL("expected an Error for ", file.string());
  return ErrorCode::usage;
}

// ---- hand-built zip archives -------------------------------------------------------------------

struct Record {
  std::string name;
  std::string data;
  std::uint16_t method = 0;
  std::uint16_t flags = 0;
  std::uint64_t claimed_size = 0;  // 0: the real size
};

// A stored zip with every directory field in ZIP64 form when `zip64` (as writers do past 4 GiB).
std::vector<std::byte> build_zip(const std::vector<Record>& records, bool zip64) {
  std::vector<std::byte> out;
  std::vector<std::uint64_t> local_offsets;
  for (const Record& r : records) {
    local_offsets.push_back(out.size());
    test::put_u32(out, 0x04034b50);
    test::put_u16(out, 20);
    test::put_u16(out, r.flags);
    test::put_u16(out, r.method);
    test::put_u32(out, 0);
    test::put_u32(out, 0);  // crc: not checked by a loader that maps
    test::put_u32(out, static_cast<std::uint32_t>(r.data.size()));
    test::put_u32(out, static_cast<std::uint32_t>(r.data.size()));
    test::put_u16(out, static_cast<std::uint16_t>(r.name.size()));
    test::put_u16(out, 0);
    test::put_bytes(out, r.name);
    test::put_bytes(out, r.data);
  }
  const std::uint64_t cd_offset = out.size();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const std::uint64_t size = r.claimed_size ? r.claimed_size : r.data.size();
    test::put_u32(out, 0x02014b50);
    test::put_u16(out, 45);
    test::put_u16(out, 45);
    test::put_u16(out, r.flags);
    test::put_u16(out, r.method);
    test::put_u32(out, 0);
    test::put_u32(out, 0);
    test::put_u32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(size));
    test::put_u32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(size));
    test::put_u16(out, static_cast<std::uint16_t>(r.name.size()));
    test::put_u16(out, zip64 ? 28 : 0);
    test::put_u16(out, 0);  // comment length
    test::put_u16(out, 0);  // disk
    test::put_u16(out, 0);  // internal attributes
    test::put_u32(out, 0);  // external attributes
    test::put_u32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(local_offsets[i]));
    test::put_bytes(out, r.name);
    if (zip64) {
      test::put_u16(out, 0x0001);
      test::put_u16(out, 24);
      test::put_u64(out, size);
      test::put_u64(out, size);
      test::put_u64(out, local_offsets[i]);
    }
  }
  const std::uint64_t cd_size = out.size() - cd_offset;
  if (zip64) {
    const std::uint64_t record = out.size();
    test::put_u32(out, 0x06064b50);
    test::put_u64(out, 44);
    test::put_u16(out, 45);
    test::put_u16(out, 45);
    test::put_u32(out, 0);
    test::put_u32(out, 0);
    test::put_u64(out, records.size());
    test::put_u64(out, records.size());
    test::put_u64(out, cd_size);
    test::put_u64(out, cd_offset);
    test::put_u32(out, 0x07064b50);
    test::put_u32(out, 0);
    test::put_u64(out, record);
    test::put_u32(out, 1);
  }
  test::put_u32(out, 0x06054b50);
  test::put_u16(out, 0);
  test::put_u16(out, 0);
  test::put_u16(out, zip64 ? 0xFFFF : static_cast<std::uint16_t>(records.size()));
  test::put_u16(out, zip64 ? 0xFFFF : static_cast<std::uint16_t>(records.size()));
  test::put_u32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(cd_size));
  test::put_u32(out, zip64 ? 0xFFFFFFFF : static_cast<std::uint32_t>(cd_offset));
  test::put_u16(out, 0);
  return out;
}

// The records of a torch-written checkpoint (read back through the reader's own zip index: a
// wrong index would show as a manifest that disagrees with torch below).
std::vector<Record> records_of(const fs::path& file) {
  std::string out;
  REQUIRE(test::run_command(str(test::kPython,
                                " -c \"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
                                "print('\\n'.join(z.namelist()))\" ",
                                file.string()),
                            &out) == 0);
  std::vector<Record> records;
  std::istringstream names(out);
  std::string name;
  while (std::getline(names, name)) {
    if (name.empty()) continue;
    std::string data;
    REQUIRE(test::run_command(
                str(test::kPython,
                    " -c \"import zipfile,sys; "
                    "sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).hex().encode())\" ",
                    file.string(), " ", name),
                &data) == 0);
    std::string raw;
    for (std::size_t i = 0; i + 1 < data.size(); i += 2)
      raw += static_cast<char>(std::stoi(data.substr(i, 2), nullptr, 16));
    records.push_back(Record{name, raw});
  }
  return records;
}

}  // namespace

TEST_CASE("pytorch: every dtype torch has matches torch.load (names, dtypes, shapes, bytes)") {
  check_against_torch(checkpoints() / "dtypes.pt");
  const Manifest m = open_manifest(checkpoints() / "dtypes.pt");
  CHECK(m.find("scalar")->shape.empty());
  CHECK(m.find("empty")->pieces.empty());
  CHECK(m.find("c128")->bytes == 24 * 16);
}

TEST_CASE("pytorch: tied embeddings are two tensors whose pieces are the same bytes") {
  check_against_torch(checkpoints() / "tied.pt");
  const Manifest m = open_manifest(checkpoints() / "tied.pt");
  const TensorInfo* embed = m.find("embed.weight");
  const TensorInfo* head = m.find("lm_head.weight");
  REQUIRE(embed != nullptr);
  REQUIRE(head != nullptr);
  REQUIRE(embed->pieces.size() == 1);
  REQUIRE(head->pieces.size() == 1);
  CHECK(embed->pieces[0].offset == head->pieces[0].offset);
  CHECK(embed->pieces[0].length == 16 * 8 * 4);
}

TEST_CASE("pytorch: the caps on tensors and name bytes name the checkpoint and data.pkl") {
  const fs::path path = checkpoints() / "tied.pt";
  const Manifest full = open_manifest(path);
  std::uint64_t names = 0;
  for (const TensorInfo& t : full.tensors) names += t.name.size();
  OpenOptions options;
  options.max_tensors = full.tensors.size() - 1;
  Error e = test::error_of([&] { open_manifest(path, options); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()).find(path.string() + ": data.pkl: tensor '") == 0);
  CHECK(std::string(e.what()).find("(OpenOptions::max_tensors)") != std::string::npos);
  options = {};
  options.max_name_bytes = names - 1;
  e = test::error_of([&] { open_manifest(path, options); });
  CHECK(std::string(e.what()).find("(OpenOptions::max_name_bytes;") != std::string::npos);
  options.max_name_bytes = names;
  CHECK(open_manifest(path, options).tensors.size() == full.tensors.size());
}

TEST_CASE("pytorch: views with a storage offset point into their storage record") {
  check_against_torch(checkpoints() / "views.pt");
  const Manifest m = open_manifest(checkpoints() / "views.pt");
  const std::uint64_t base = m.find("head")->pieces[0].offset;
  CHECK(m.find("middle")->pieces[0].offset == base + 10 * 4);
  CHECK(m.find("grid")->pieces[0].offset == base + 40 * 4);
  CHECK(m.find("row")->pieces[0].offset == base + 70 * 4);
  CHECK(base % 64 == 0);  // torch aligns records to 64 bytes: zero-copy friendly
}

TEST_CASE("pytorch: nested containers name tensors by their path; other values are skipped") {
  check_against_torch(checkpoints() / "nested.pt");
  const Manifest m = open_manifest(checkpoints() / "nested.pt");
  CHECK(m.find("model.layer.w") != nullptr);
  CHECK(m.find("optimizer.state.0.exp_avg") != nullptr);
  CHECK(m.find("history.1")->dtype == DType::I64);
  CHECK(m.tensors.size() == 6);
}

TEST_CASE("pytorch: non-contiguous tensors load row-major, as torch.load(...).contiguous() gives them") {
  check_against_torch(checkpoints() / "transpose.pt");
  check_against_torch(checkpoints() / "strided.pt");
  const Manifest m = open_manifest(checkpoints() / "strided.pt");
  CHECK(m.find("t")->encoding == Encoding::strided);
  CHECK(m.find("fortran")->encoding == Encoding::strided);
  CHECK(m.find("plain")->encoding == Encoding::raw);
  CHECK(*m.find("perm")->strides == std::vector<std::int64_t>{5, 60, 1, 20});
  // Loaded through the real loader, on each path that copies: never zero_copy, and the device holds
  // what torch gives; verify agrees.
  const auto device = open_device("host");
  for (const Placement force : {Placement::direct, Placement::staged}) {
    LoadOptions options;
    options.plan.force = force;
    const Weights w = load(m, *device, options);
    CHECK(test::check_against_reference(checkpoints() / "strided.pt", "pytorch", m, w) == m.tensors.size());
    CHECK(verify(w).tensors == m.tensors.size());
  }
  const Weights w = load(m, *device);
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    CAPTURE(m.tensors[i].name);
    if (m.tensors[i].encoding == Encoding::strided) {
      CHECK(w.plan().tensors[i].placement != Placement::zero_copy);
      CHECK(w.plan().tensors[i].reason.find("strided") != std::string::npos);
    }
  }
}

TEST_CASE("pytorch: strides that repeat elements (a broadcast) are a clear unsupported error naming the tensor") {
  std::string message;
  CHECK(error_of(checkpoints() / "broadcast.pt", &message) == ErrorCode::unsupported);
  CHECK(message.find("tensor 'e'") != std::string::npos);
  CHECK(message.find("overlap or repeat") != std::string::npos);
}

TEST_CASE("pytorch: legacy torch.save files (before 1.6) read as torch.load reads them, without running code") {
  for (const char* name : {"legacy_dtypes.pt", "legacy_views.bin", "legacy_strided.pt", "legacy_protocol4.pt"}) {
    CAPTURE(name);
    check_against_torch(checkpoints() / name);
    const Manifest m = open_manifest(checkpoints() / name);
    CHECK(std::any_of(m.metadata.begin(), m.metadata.end(),
                      [](const MetaEntry& e) { return e.key == "pytorch.serialization"; }));
    if (m.find("empty")) continue;  // the reference check wants every tensor loaded (an empty one is skipped)
    const Weights w = load(m, *open_device("host"));
    CHECK(test::check_against_reference(checkpoints() / name, "pytorch", m, w) == m.tensors.size());
  }
  const Manifest views = open_manifest(checkpoints() / "legacy_views.bin");
  CHECK(views.find("a")->pieces[0].offset == views.find("b")->pieces[0].offset);  // one storage, two tensors
  std::string message;
  CHECK(error_of(checkpoints() / "legacy_system.pt", &message) == ErrorCode::bad_input);
  CHECK(message.find("refuses global 'posix.system'") != std::string::npos);
  CHECK_FALSE(fs::exists(checkpoints() / "ran-system"));

  // Cut anywhere — in the pickles, in the key list, in a storage's count or bytes — it is bad input.
  TempDir dir;
  const auto bytes = test::read_file(checkpoints() / "legacy_views.bin");
  for (std::size_t cut : {std::size_t{20}, std::size_t{300}, bytes.size() / 2, bytes.size() - 90, bytes.size() - 1}) {
    CAPTURE(cut);
    test::write_file(dir / "cut.pt", std::span(bytes).first(cut));
    CHECK(error_of(dir / "cut.pt", &message) == ErrorCode::bad_input);
    CHECK(message.find("cut.pt") != std::string::npos);
  }
}

TEST_CASE(
    "pytorch: a legacy storage whose element count differs from its persistent id is refused, as torch.load refuses "
    "it") {
  // One storage of 4 floats; the file's own count (the 8 bytes before the data) is rewritten to 3
  // (fewer) and to 5 (more, with the fifth element's bytes appended): torch.load checks the count
  // against the persistent id either way ("storage has wrong byte size").
  TempDir dir;
  const fs::path original = dir / "one.pt";
  REQUIRE(test::run_command(str(test::kPython,
                                " -c \"import torch,sys; torch.save({'w': torch.arange(4, dtype=torch.float32)}, ",
                                "sys.argv[1], _use_new_zipfile_serialization=False)\" ", original.string())) == 0);
  const auto bytes = test::read_file(original);
  REQUIRE(bytes.size() > 24);
  const std::size_t count_at = bytes.size() - 16 - 8;  // the last storage: count, then 16 bytes
  std::uint64_t count = 0;
  std::memcpy(&count, bytes.data() + count_at, 8);
  REQUIRE(count == 4);
  for (const std::uint64_t wrong : {std::uint64_t{3}, std::uint64_t{5}}) {
    CAPTURE(wrong);
    auto changed = bytes;
    std::memcpy(changed.data() + count_at, &wrong, 8);
    if (wrong > count) changed.resize(changed.size() + 4, std::byte{0});
    const fs::path file = dir / "changed.pt";
    test::write_file(file, changed);
    std::string out;
    CHECK(test::run_command(
              str(test::kPython, " -c \"import torch,sys; torch.load(sys.argv[1])\" ", file.string(), " 2>&1"), &out) !=
          0);
    std::string message;
    CHECK(error_of(file, &message) == ErrorCode::bad_input);
    CHECK_MESSAGE(message.find(str("holds ", wrong, " elements but its persistent id says 4")) != std::string::npos,
                  message);
  }
}

TEST_CASE("pytorch: one storage key under two storage types takes the first, as torch.load does") {
  check_against_torch(checkpoints() / "twotypes.pt");
  const Manifest m = open_manifest(checkpoints() / "twotypes.pt");
  CHECK(m.find("b")->dtype == DType::F32);  // written as an IntStorage, read as the FloatStorage named first
  CHECK(m.find("b")->pieces[0].offset == m.find("a")->pieces[0].offset);
}

TEST_CASE("pytorch: BUILD state on a rebuilt tensor (torch.load would swap its storage) is refused, naming it") {
  // torch.load gives the second storage's ones, not the rebuilt zeros: the file says two things.
  std::string out;
  REQUIRE(
      test::run_command(str(test::kPython, " -c \"import torch,sys; print(torch.load(sys.argv[1])['w'].tolist())\" ",
                            (checkpoints() / "build.pt").string()),
                        &out) == 0);
  CHECK(out.find("[1.0, 1.0, 1.0]") != std::string::npos);
  std::string message;
  CHECK(error_of(checkpoints() / "build.pt", &message) == ErrorCode::bad_input);
  CHECK(message.find("BUILD sets state on the result of torch._utils._rebuild_tensor_v2") != std::string::npos);
}

TEST_CASE("pytorch: two zip end records are refused as ambiguous; bytes after the end record are not") {
  TempDir dir;
  const auto bytes = test::read_file(checkpoints() / "views.pt");
  REQUIRE(bytes.size() > 22);
  const std::vector<std::byte> end(bytes.end() - 22, bytes.end());
  REQUIRE(std::to_integer<int>(end[0]) == 0x50);
  // The original end record's comment now covers a second end record appended after it.
  auto two = bytes;
  two[two.size() - 2] = std::byte{22};
  two.insert(two.end(), end.begin(), end.end());
  test::write_file(dir / "two.pt", two);
  std::string message;
  CHECK(error_of(dir / "two.pt", &message) == ErrorCode::bad_input);
  CHECK(message.find("two zip end of central directory records") != std::string::npos);
  // Junk after the end record: torch's reader (miniz) finds the last end record all the same.
  auto junk = bytes;
  test::put_bytes(junk, "trailing bytes");
  test::write_file(dir / "junk.pt", junk);
  check_against_torch(dir / "junk.pt");
}

TEST_CASE("pytorch: a checkpoint that names os.system or builtins.eval is refused and nothing runs") {
  std::string message;
  CHECK(error_of(checkpoints() / "system.pt", &message) == ErrorCode::bad_input);
  CHECK(message.find("refuses global 'posix.system'") != std::string::npos);  // os.system pickles as posix.system
  CHECK(message.find("system.pt") != std::string::npos);
  CHECK(error_of(checkpoints() / "eval.pt", &message) == ErrorCode::bad_input);
  // Protocol 2 writes builtins under its Python 2 name.
  CHECK(message.find("refuses global '__builtin__.eval'") != std::string::npos);
  CHECK_FALSE(fs::exists(checkpoints() / "ran-system"));
  CHECK_FALSE(fs::exists(checkpoints() / "ran-eval"));
  // The payloads are live: torch.load does run them (which is why lwload must not).
  CHECK(test::run_command(str(test::kPython, " -c \"import torch,sys; torch.load(sys.argv[1])\" ",
                              (checkpoints() / "system.pt").string(), " >/dev/null 2>&1")) == 0);
  CHECK(fs::exists(checkpoints() / "ran-system"));
  fs::remove(checkpoints() / "ran-system");
}

TEST_CASE("pytorch: a truncated archive is bad input at every cut") {
  TempDir dir;
  const auto bytes = test::read_file(checkpoints() / "views.pt");
  for (std::size_t cut : {std::size_t{0}, std::size_t{10}, bytes.size() / 2, bytes.size() - 30, bytes.size() - 1}) {
    CAPTURE(cut);
    test::write_file(dir / "cut.pt", std::span(bytes).first(cut));
    try {
      (void)open_manifest(dir / "cut.pt", OpenOptions{nullptr, "pytorch"});
      FAIL("a truncated archive was accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::bad_input);
      CHECK(std::string(e.what()).find("cut.pt") != std::string::npos);
    }
  }
}

TEST_CASE("pytorch: hand-built archives: ZIP64 reads like the original; bad records are refused") {
  TempDir dir;
  const auto records = records_of(checkpoints() / "views.pt");
  REQUIRE(records.size() >= 3);
  std::string message;

  SUBCASE("ZIP64 directory and end records") {
    test::write_file(dir / "z64.pt", build_zip(records, true));
    const Manifest original = open_manifest(checkpoints() / "views.pt");
    const Manifest m = open_manifest(dir / "z64.pt");
    REQUIRE(m.tensors.size() == original.tensors.size());
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      CHECK(tensor_data(m, m.tensors[i]) == tensor_data(original, original.tensors[i]));
  }
  SUBCASE("a ZIP64 locator is followed whatever the end record's own fields say, as miniz does") {
    auto bytes = build_zip(records, true);
    // The 32-bit end record now names an empty directory at offset 0; torch's reader (miniz) and
    // Python's zipfile take the ZIP64 record the locator names instead.
    for (std::size_t at = bytes.size() - 22 + 8; at < bytes.size() - 2; ++at) bytes[at] = std::byte{0};
    test::write_file(dir / "locator.pt", bytes);
    check_against_torch(dir / "locator.pt");
  }
  SUBCASE("a record past the end of the file") {
    auto bad = records;
    bad.back().claimed_size = 1 << 20;
    test::write_file(dir / "past.pt", build_zip(bad, false));
    CHECK(error_of(dir / "past.pt", &message) == ErrorCode::bad_input);
    CHECK(message.find("extend past the end of the file") != std::string::npos);
    CHECK(message.find(bad.back().name) != std::string::npos);
  }
  SUBCASE("a ZIP64 size that overflows 64 bits") {
    auto bad = records;
    bad.back().claimed_size = ~std::uint64_t{0} - 8;
    test::write_file(dir / "overflow.pt", build_zip(bad, true));
    CHECK(error_of(dir / "overflow.pt", &message) == ErrorCode::bad_input);
    CHECK(message.find("overflows 64 bits") != std::string::npos);
  }
  SUBCASE("a compressed record") {
    auto bad = records;
    bad.front().method = 8;
    test::write_file(dir / "deflate.pt", build_zip(bad, false));
    CHECK(error_of(dir / "deflate.pt", &message) == ErrorCode::unsupported);
    CHECK(message.find("is compressed; lwload maps stored records only") != std::string::npos);
  }
  SUBCASE("an encrypted record") {
    auto bad = records;
    bad.front().flags = 1;
    test::write_file(dir / "crypt.pt", build_zip(bad, false));
    CHECK(error_of(dir / "crypt.pt", &message) == ErrorCode::unsupported);
    CHECK(message.find("encrypted") != std::string::npos);
  }
  SUBCASE("a storage record missing from the archive") {
    std::vector<Record> bad;
    for (const Record& r : records)
      if (r.name.find("/data/") == std::string::npos) bad.push_back(r);
    test::write_file(dir / "missing.pt", build_zip(bad, false));
    CHECK(error_of(dir / "missing.pt", &message) == ErrorCode::bad_input);
    CHECK(message.find("is missing from the archive") != std::string::npos);
  }
  SUBCASE("a TorchScript class source whose deflate stream is corrupt") {
    // An archive whose root object is `__torch__.M`: its source must be read to know its state_dict().
    const std::string pickle(
        "\x80\x02"
        "c__torch__\nM\n"
        ")\x81"
        "}b.",
        20);
    Record code{"m/code/__torch__.py", "\xff\xfe\x01garbage"};
    code.method = 8;
    test::write_file(dir / "m.pt", build_zip({Record{"m/data.pkl", pickle}, code}, false));
    CHECK(error_of(dir / "m.pt", &message) == ErrorCode::bad_input);
    CHECK(message.find("m/code/__torch__.py") != std::string::npos);
    CHECK(message.find("corrupt deflate stream") != std::string::npos);
  }
  SUBCASE("BUILD on a plain dict or a list (Python's unpickler refuses both) is refused") {
    for (const std::string& pickle : {std::string("\x80\x02}}b.", 6), std::string("\x80\x02]}b.", 6)}) {
      test::write_file(dir / "b.pt", build_zip({Record{"b/data.pkl", pickle}}, false));
      CHECK(error_of(dir / "b.pt", &message) == ErrorCode::bad_input);
      CHECK(message.find("which has no attributes to set") != std::string::npos);
    }
  }
  SUBCASE("a zip that is not a checkpoint") {
    test::write_file(dir / "other.zip", build_zip({Record{"readme.txt", "hello"}}, false));
    CHECK(error_of(dir / "other.zip", &message) == ErrorCode::bad_input);
    CHECK(message.find("data.pkl") != std::string::npos);
  }
}

TEST_CASE("lwload inspect / plan / load --verify on a torch checkpoint; exit 3 for code") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!exe) {
    MESSAGE("LWLOAD_EXE not set: skipping the CLI check");
    return;
  }
  const std::string tied = (checkpoints() / "tied.pt").string();
  std::string out;
  REQUIRE(test::run_command(str(exe, " inspect --json ", tied), &out) == 0);
  CHECK(out.find("\"pytorch\"") != std::string::npos);
  CHECK(out.find("\"lm_head.weight\"") != std::string::npos);
  out.clear();
  CHECK(test::run_command(str(exe, " plan ", tied, " --device host"), &out) == 0);
  CHECK(out.find("zero_copy") != std::string::npos);
  for (const char* placement : {"", " --placement direct", " --placement staged"}) {
    CAPTURE(placement);
    for (const char* model : {"tied.pt", "dtypes.pt", "nested.pt"}) {
      out.clear();
      CHECK(test::run_command(
                str(exe, " load ", (checkpoints() / model).string(), " --device host --verify", placement), &out) == 0);
      CHECK(out.find("verify: ok") != std::string::npos);
    }
  }
  CHECK(test::run_command(str(exe, " inspect ", (checkpoints() / "system.pt").string(), " 2>&1"), &out) == 3);
  CHECK(out.find("posix.system") != std::string::npos);
  CHECK_FALSE(fs::exists(checkpoints() / "ran-system"));
}

TEST_CASE("pytorch: TorchScript archives (torch.jit.save) load as torch.jit.load's state_dict names them") {
  // Scripted and traced modules: nested Sequential, Conv2d + BatchNorm2d (buffers, an int64
  // num_batches_tracked), a registered buffer, an LSTM, float16 weights. Their code/ records are
  // compressed and never read; nothing in the archive runs.
  TempDir dir;
  const std::string script = R"PY(
import sys, torch
out = sys.argv[1]
torch.manual_seed(3)
class WithBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 3)
        self.register_buffer('scale', torch.arange(3, dtype=torch.float32))
    def forward(self, x):
        return self.proj(x) * self.scale
nested = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU()), torch.nn.Linear(4, 2))
conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).eval()
models = {
    'nested_scripted': torch.jit.script(nested),
    'conv_bn_traced': torch.jit.trace(conv, torch.randn(1, 3, 8, 8)),
    'buffer_scripted': torch.jit.script(WithBuffer()),
    'lstm_scripted': torch.jit.script(torch.nn.LSTM(6, 4, num_layers=2)),
    'half_scripted': torch.jit.script(torch.nn.Linear(8, 8).half()),
}
for name, m in models.items():
    torch.jit.save(m, f'{out}/{name}.pt')
)PY";
  test::write_file(dir / "write.py", std::string_view(script));
  std::string out;
  REQUIRE_MESSAGE(test::run_command(std::string(test::kPython) + " " + (dir / "write.py").string() + " " +
                                        dir.path().string() + " 2>&1",
                                    &out) == 0,
                  out);
  const auto device = open_device("host");
  std::size_t total = 0;
  for (const std::string name :
       {"nested_scripted", "conv_bn_traced", "buffer_scripted", "lstm_scripted", "half_scripted"}) {
    CAPTURE(name);
    const fs::path model = dir / (name + ".pt");
    const Manifest m = open_manifest(model);
    CHECK(m.format == "pytorch");
    const Weights w = load(m, *device);
    total += test::check_against_reference(model, "pytorch", m, w);
    CHECK(verify(w).tensors == m.tensors.size());
  }
  CHECK(total == 4 + 7 + 3 + 8 + 2);
  // The LSTM's _flat_weights list (aliases of its parameters) is left out, and said so.
  const Manifest lstm = open_manifest(dir / "lstm_scripted.pt");
  CHECK(std::any_of(lstm.metadata.begin(), lstm.metadata.end(),
                    [](const MetaEntry& e) { return e.key == "torchscript.list_attribute_not_loaded._flat_weights"; }));
}

TEST_CASE("pytorch: TorchScript tensor attributes that state_dict() leaves out are metadata, not tensors") {
  // As silero VAD keeps its recurrent state: plain tensor attributes beside parameters and buffers,
  // at the top and in a submodule, and a Linear without bias (a mangled class of its own).
  TempDir dir;
  const std::string script = R"PY(
import sys, torch
class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 3)
        self.nobias = torch.nn.Linear(3, 3, bias=False)
        self._context = torch.zeros(1, 5)
    def forward(self, x):
        return self.nobias(self.lin(x)) + self._context.sum()
class Vad(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.register_buffer('buf', torch.ones(2))
        self._state = torch.zeros(2, 1, 64)
    def forward(self, x):
        return self.inner(x) + self._state.sum() + self.buf.sum()
m = torch.jit.script(Vad())
torch.jit.save(m, sys.argv[1])
print(' '.join(sorted(m.state_dict().keys())))
)PY";
  test::write_file(dir / "write.py", std::string_view(script));
  std::string keys;
  REQUIRE(test::run_command(str(test::kPython, " ", (dir / "write.py").string(), " ", (dir / "vad.pt").string()),
                            &keys) == 0);
  CHECK(keys.find("_state") == std::string::npos);  // torch's own word
  const Manifest m = open_manifest(dir / "vad.pt");
  std::string names;
  std::vector<std::string> sorted;
  for (const TensorInfo& t : m.tensors) sorted.push_back(t.name);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& n : sorted) names += (names.empty() ? "" : " ") + n;
  CHECK(names + "\n" == keys);
  const auto said = [&](std::string_view key) {
    return std::any_of(m.metadata.begin(), m.metadata.end(), [&](const MetaEntry& e) { return e.key == key; });
  };
  CHECK(said("torchscript.attribute_not_in_state_dict._state"));
  CHECK(said("torchscript.attribute_not_in_state_dict.inner._context"));
  const Weights w = load(m, *open_device("host"));
  CHECK(test::check_against_reference(dir / "vad.pt", "pytorch", m, w) == m.tensors.size());
}

TEST_CASE("pytorch: two tensors whose joined names collide ('a.b' and 'a' → 'b') are refused, naming the name") {
  // torch.load keeps both (two dicts); lwload names nested tensors by joining keys with '.', so
  // both would be 'a.b' and a lookup by name would find only one of them.
  TempDir dir;
  const fs::path file = dir / "collide.pt";
  REQUIRE(test::run_command(str(test::kPython, " -c \"import torch,sys; torch.save({'a.b': torch.ones(2), ",
                                "'a': {'b': torch.zeros(2)}}, sys.argv[1])\" ", file.string())) == 0);
  std::string message;
  CHECK(error_of(file, &message) == ErrorCode::bad_input);
  CHECK_MESSAGE(message.find("'a.b'") != std::string::npos, message);
  CHECK_MESSAGE(message.find("the name appears twice") != std::string::npos, message);
}
