// PyTorch checkpoints pickled with protocols 4 and 5 (torch.save(..., pickle_protocol=N)): the
// opcodes protocol 2 never writes — FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL — carry the
// same state dicts, and the same allowlist must hold for globals named through STACK_GLOBAL
// (strings pushed directly, or fetched back from the memo). Benign checkpoints must read as
// torch.load reads them (names, dtypes, shapes, bytes); checkpoints that ask to run code must be
// refused, and a marker file proves nothing ran. Each written pickle is disassembled
// (pickletools) first, so the test fails if the opcodes it is about are not there.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;
using lwload::test::TempDir;

namespace {

// Writes into argv[1], for protocols 4 and 5: benign state dicts (dtypes, tied embeddings, views,
// nested containers) and checkpoints whose pickles name code — from torch.save itself (an object
// whose __reduce__ is os.system / builtins.eval) and hand-assembled ones whose STACK_GLOBAL takes
// its strings from the memo (BINGET) or names a callable beside allowed ones.
constexpr const char* kWriter = R"PY(
import io, os, sys, builtins, struct, zipfile, torch
out = sys.argv[1]
torch.manual_seed(11)

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.lm_head = torch.nn.Linear(8, 16, bias=False)
        self.lm_head.weight = self.embed.weight
class System:
    def __reduce__(self): return (os.system, ('touch ' + os.path.join(out, 'ran-system'),))
class Eval:
    def __reduce__(self): return (builtins.eval, ("open(%r, 'w')" % os.path.join(out, 'ran-eval'),))

base = torch.arange(100, dtype=torch.float32)
for p in (4, 5):
    sd = {'f32': torch.randn(2, 3), 'f16': torch.randn(5).half(), 'bf16': torch.randn(3).bfloat16(),
          'i64': torch.arange(7), 'u8': torch.arange(9, dtype=torch.uint8), 'bool': torch.arange(4) % 2 == 0,
          'scalar': torch.tensor(2.5), 'empty': torch.zeros(0, 3)}
    torch.save(sd, os.path.join(out, f'dtypes{p}.pt'), pickle_protocol=p)
    torch.save(Tied().state_dict(), os.path.join(out, f'tied{p}.pt'), pickle_protocol=p)
    torch.save({'head': base[:10], 'grid': base[40:60].view(4, 5), 'row': base.view(10, 10)[7]},
               os.path.join(out, f'views{p}.pt'), pickle_protocol=p)
    torch.save({'model': {'layer': {'w': torch.randn(3, 2), 'b': torch.randn(2)}}, 'epoch': 3,
                'history': [torch.ones(2), torch.zeros(3, dtype=torch.int64)], 'name': 'run-1', 'lr': 0.5},
               os.path.join(out, f'nested{p}.pt'), pickle_protocol=p)
    torch.save({'w': torch.ones(2), 'x': System()}, os.path.join(out, f'system{p}.pt'), pickle_protocol=p)
    torch.save({'w': torch.ones(2), 'x': Eval()}, os.path.join(out, f'eval{p}.pt'), pickle_protocol=p)

def short(s):
    b = s.encode()
    return b'\x8c' + bytes([len(b)]) + b
def framed(body, p):
    return b'\x80' + bytes([p]) + b'\x95' + struct.pack('<Q', len(body)) + body
def with_pickle(template, name, pkl):
    # The template's records, data.pkl replaced: a checkpoint torch.load reads like any other.
    src = zipfile.ZipFile(os.path.join(out, template))
    dst = zipfile.ZipFile(os.path.join(out, name), 'w', zipfile.ZIP_STORED)
    for info in src.infolist():
        data = pkl if info.filename.endswith('/data.pkl') else src.read(info.filename)
        dst.writestr(info.filename, data)
    dst.close()

torch.save({'n': 1}, os.path.join(out, 'plain.pt'), pickle_protocol=4)
marker = os.path.join(out, 'ran-crafted')
call = short("open(%r, 'w')" % marker) + b'\x94\x85R'  # (arg,) REDUCE
# builtins.eval through STACK_GLOBAL, its strings fetched back from the memo (BINGET 0, BINGET 1).
memo = short('builtins') + b'\x940' + short('eval') + b'\x940' + b'h\x00h\x01\x93\x94' + call + b'.'
# os.system named directly, wrapped in a dict as torch.save writes one.
direct = b'}\x94' + short('x') + b'\x94' + short('posix') + b'\x94' + short('system') + b'\x94\x93\x94' + \
         short('touch ' + marker) + b'\x94\x85R\x94s.'
# An allowed global first (collections.OrderedDict, memoized), then a STACK_GLOBAL whose module is
# the allowed one's string fetched from the memo and whose name is not allowed.
mixed = short('collections') + b'\x94' + short('OrderedDict') + b'\x94\x93\x94)R\x94' + \
        b'0' + b'h\x00' + short('namedtuple') + b'\x94\x93\x94' + short('T') + b'\x94' + short('a') + b'\x94\x86R.'
for p in (4, 5):
    with_pickle('plain.pt', f'memo{p}.pt', framed(memo, p))
    with_pickle('plain.pt', f'direct{p}.pt', framed(direct, p))
    with_pickle('plain.pt', f'mixed{p}.pt', framed(mixed, p))
)PY";

// One line per tensor of torch.load(argv[1]): name dtype dims(comma) hex-bytes ('.' joins nested keys).
constexpr const char* kReference = R"PY(
import sys, torch
names = {torch.float32: 'F32', torch.float16: 'F16', torch.bfloat16: 'BF16', torch.float64: 'F64',
         torch.int64: 'I64', torch.int32: 'I32', torch.int16: 'I16', torch.int8: 'I8', torch.uint8: 'U8',
         torch.bool: 'BOOL'}
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

// The protocol and the opcode names of the archive's data.pkl, one per line.
constexpr const char* kOpcodes = R"PY(
import sys, zipfile, pickletools
z = zipfile.ZipFile(sys.argv[1])
pkl = z.read([n for n in z.namelist() if n.endswith('/data.pkl')][0])
for op, arg, pos in pickletools.genops(pkl):
    print(op.name, arg if op.name == 'PROTO' else '')
)PY";

const fs::path& checkpoints() {
  static TempDir dir;
  static const bool written = [] {
    test::write_file(dir / "make.py", std::string_view(kWriter));
    test::write_file(dir / "ref.py", std::string_view(kReference));
    test::write_file(dir / "ops.py", std::string_view(kOpcodes));
    return test::run_command(str(test::kPython, " ", (dir / "make.py").string(), " ", dir.path().string())) == 0;
  }();
  REQUIRE(written);
  return dir.path();
}

// The opcodes of the checkpoint's pickle, and its protocol.
std::multiset<std::string> opcodes(const fs::path& file, int* protocol) {
  std::string out;
  REQUIRE(test::run_command(str(test::kPython, " ", (checkpoints() / "ops.py").string(), " ", file.string()), &out) ==
          0);
  std::multiset<std::string> ops;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string op;
    words >> op;
    if (op == "PROTO") words >> *protocol;
    ops.insert(op);
  }
  return ops;
}

void check_protocol_opcodes(const fs::path& file, int protocol) {
  CAPTURE(file.filename().string());
  int written = 0;
  const auto ops = opcodes(file, &written);
  CHECK(written == protocol);
  CHECK(ops.count("FRAME") >= 1);
  CHECK(ops.count("STACK_GLOBAL") >= 1);
  CHECK(ops.count("MEMOIZE") >= 1);
  CHECK(ops.count("GLOBAL") == 0);
  CHECK(ops.count("BINPUT") == 0);  // protocol 4 memoizes with MEMOIZE only
}

struct RefTensor {
  std::string dtype, shape, hex;
};

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

std::string hex_of(const std::vector<std::byte>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += digits[std::to_integer<int>(b) >> 4];
    out += digits[std::to_integer<int>(b) & 15];
  }
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out.empty() ? "-" : out;
}

// The manifest matches torch.load tensor for tensor; returns the manifest.
Manifest check_against_torch(const fs::path& file) {
  CAPTURE(file.filename().string());
  const Manifest m = open_manifest(file);
  CHECK(m.format == "pytorch");
  const auto ref = reference(file);
  REQUIRE(!ref.empty());
  REQUIRE(ref.size() == m.tensors.size());
  for (const TensorInfo& t : m.tensors) {
    CAPTURE(t.name);
    const auto it = ref.find(t.name);
    REQUIRE(it != ref.end());
    CHECK(std::string(dtype_name(t.dtype)) == it->second.dtype);
    CHECK(shape_text(t.shape) == it->second.shape);
    std::vector<std::byte> bytes;
    for (const Piece& p : t.pieces) {
      const auto part = test::read_range(m.files[p.file], p.offset, p.length);
      bytes.insert(bytes.end(), part.begin(), part.end());
    }
    const std::string hex = hex_of(bytes);
    CHECK((hex.empty() ? std::string("-") : hex) == it->second.hex);
  }
  return m;
}

// The refusal of `file`: bad_input naming the file and `global`.
void check_refused(const fs::path& file, const std::string& global) {
  CAPTURE(file.filename().string());
  try {
    (void)open_manifest(file);
    FAIL("a checkpoint naming ", global, " was read");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    const std::string what = e.what();
    CHECK(what.find(file.filename().string()) != std::string::npos);
    CHECK(what.find("refuses global '" + global + "'") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("pickle protocols 4 and 5: the checkpoints use FRAME, MEMOIZE and STACK_GLOBAL") {
  for (const int p : {4, 5})
    for (const char* name : {"dtypes", "tied", "views", "nested", "system", "eval", "memo", "direct", "mixed"})
      check_protocol_opcodes(checkpoints() / (name + std::to_string(p) + ".pt"), p);
}

TEST_CASE("pickle protocols 4 and 5: benign state dicts read as torch.load reads them") {
  for (const int p : {4, 5}) {
    CAPTURE(p);
    const std::string n = std::to_string(p);
    const Manifest dtypes = check_against_torch(checkpoints() / ("dtypes" + n + ".pt"));
    CHECK(dtypes.tensors.size() == 8);
    const Manifest tied = check_against_torch(checkpoints() / ("tied" + n + ".pt"));
    const TensorInfo* embed = tied.find("embed.weight");
    const TensorInfo* head = tied.find("lm_head.weight");
    REQUIRE(embed != nullptr);
    REQUIRE(head != nullptr);
    REQUIRE(head->pieces.size() == 1);
    CHECK(embed->pieces.at(0).offset == head->pieces[0].offset);  // one storage, fetched from the memo
    const Manifest views = check_against_torch(checkpoints() / ("views" + n + ".pt"));
    CHECK(views.find("row")->pieces.at(0).offset == views.find("head")->pieces.at(0).offset + 70 * 4);
    const Manifest nested = check_against_torch(checkpoints() / ("nested" + n + ".pt"));
    CHECK(nested.find("model.layer.w") != nullptr);
    CHECK(nested.find("history.1") != nullptr);
  }
}

TEST_CASE("pickle protocols 4 and 5: globals named through STACK_GLOBAL are held to the allowlist; nothing runs") {
  for (const int p : {4, 5}) {
    CAPTURE(p);
    const std::string n = std::to_string(p);
    check_refused(checkpoints() / ("system" + n + ".pt"), "posix.system");
    check_refused(checkpoints() / ("eval" + n + ".pt"), "builtins.eval");  // protocol 3+: Python 3 names
    check_refused(checkpoints() / ("memo" + n + ".pt"), "builtins.eval");
    check_refused(checkpoints() / ("direct" + n + ".pt"), "posix.system");
    check_refused(checkpoints() / ("mixed" + n + ".pt"), "collections.namedtuple");
  }
  CHECK_FALSE(fs::exists(checkpoints() / "ran-system"));
  CHECK_FALSE(fs::exists(checkpoints() / "ran-eval"));
  CHECK_FALSE(fs::exists(checkpoints() / "ran-crafted"));
  // The payloads are live: Python's own unpickler runs them (which is why lwload must not).
  CHECK(test::run_command(str(test::kPython, " -c \"import torch,sys; torch.load(sys.argv[1], weights_only=False)\" ",
                              (checkpoints() / "memo4.pt").string(), " >/dev/null 2>&1")) == 0);
  CHECK(fs::exists(checkpoints() / "ran-crafted"));
  fs::remove(checkpoints() / "ran-crafted");
  CHECK(test::run_command(str(test::kPython, " -c \"import torch,sys; torch.load(sys.argv[1], weights_only=False)\" ",
                              (checkpoints() / "direct5.pt").string(), " >/dev/null 2>&1")) == 0);
  CHECK(fs::exists(checkpoints() / "ran-crafted"));
  fs::remove(checkpoints() / "ran-crafted");
}
