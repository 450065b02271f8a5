// The ONNX reader and typed-field decoder, checked against python3-onnx (Debian's, through
// /usr/bin/python3): the bundled samples, models the onnx package writes in the test (external data
// in several files, If/Loop subgraph initializers, every typed field), and hand-built malformed
// protobuf for each bad-input class.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "formats/decode/encoded.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/onnx.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;
using lwload::test::TempDir;

namespace {

// ---- python3-onnx reference -------------------------------------------------------------------

// Prints one line per initializer (main graph and subgraphs): name, ONNX data_type, dims, and the
// tensor's bytes as numpy holds them (hex), read by onnx itself (external data included).
constexpr const char* kReferenceScript = R"PY(
import os, sys
import numpy as np
import onnx
from onnx import numpy_helper
path = sys.argv[1]
model = onnx.load(path, load_external_data=False)
base = os.path.dirname(path)
def walk(graph):
    for t in graph.initializer:
        yield t
    for node in graph.node:
        for a in node.attribute:
            if a.HasField('g'):
                yield from walk(a.g)
            for g in a.graphs:
                yield from walk(g)
for t in walk(model.graph):
    dt = t.data_type
    if dt == 8:
        data = '-'
    else:
        try:
            a = numpy_helper.to_array(t, base)
            if dt == 16:  # onnx 1.12 widens bfloat16 to float32; keep the stored 16 bits
                a = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            data = a.tobytes().hex()
        except TypeError:  # onnx 1.12 cannot convert complex typed fields
            vals = t.float_data if dt == 14 else t.double_data
            data = np.array(vals, dtype=np.float32 if dt == 14 else np.float64).tobytes().hex()
    print(t.name, dt, ','.join(str(d) for d in t.dims), data or '-', sep='\t')
)PY";

// Writes the test's models with the onnx package. argv: MODE OUT_DIR.
constexpr const char* kGeneratorScript = R"PY(
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
from onnx.external_data_helper import set_external_data
mode, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)

def graph(nodes, inits, name='g'):
    x = helper.make_tensor_value_info('x', TP.FLOAT, [None])
    y = helper.make_tensor_value_info('y', TP.FLOAT, [None])
    return helper.make_graph(nodes, name, [x], [y], initializer=inits)

def model(g):
    m = helper.make_model(g, producer_name='lwload-test', producer_version='9.9',
                          opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)])
    m.model_version = 3
    helper.set_model_props(m, {'author': 'f3'})
    return m

if mode == 'external_tool':
    # onnx's own writer: one file per tensor (all_tensors_to_one_file=False).
    inits = [numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), 'w1'),
             numpy_helper.from_array(rng.standard_normal((8,)).astype(np.float16), 'b1'),
             numpy_helper.from_array(np.arange(12, dtype=np.int64).reshape(3, 4), 'idx')]
    onnx.save_model(model(graph([helper.make_node('Identity', ['x'], ['y'])], inits)),
                    os.path.join(out, 'model.onnx'), save_as_external_data=True,
                    all_tensors_to_one_file=False, size_threshold=0)
elif mode == 'external_manual':
    # Several files, a subfolder, a shared file with offsets, one tensor inline.
    os.makedirs(os.path.join(out, 'data'))
    a = rng.standard_normal((32, 4)).astype(np.float32)
    b = rng.integers(-100, 100, (64,), dtype=np.int8)
    c = rng.standard_normal((5, 3)).astype(np.float64)
    d = np.array([1, 2, 3], dtype=np.int32)
    with open(os.path.join(out, 'a.bin'), 'wb') as f:
        f.write(a.tobytes())
    with open(os.path.join(out, 'data', 'shared.bin'), 'wb') as f:
        f.write(b.tobytes()); f.write(b'\0' * (4096 - b.nbytes)); f.write(c.tobytes())
    ta, tb, tc = (numpy_helper.from_array(v, n) for v, n in ((a, 'a'), (b, 'b'), (c, 'c')))
    set_external_data(ta, 'a.bin')
    set_external_data(tb, 'data/shared.bin', offset=0, length=b.nbytes)
    set_external_data(tc, 'data/shared.bin', offset=4096)
    for t in (ta, tb, tc):
        t.ClearField('raw_data')
        t.data_location = TP.EXTERNAL
    onnx.save_model(model(graph([helper.make_node('Identity', ['x'], ['y'])],
                                [ta, tb, tc, numpy_helper.from_array(d, 'd')])),
                    os.path.join(out, 'model.onnx'))
elif mode == 'subgraphs':
    # If(then: Identity with an initializer; else: Loop whose body has its own initializer).
    loop_body = helper.make_graph(
        [helper.make_node('Identity', ['cond_in'], ['cond_out'])], 'loop_body',
        [helper.make_tensor_value_info('i', TP.INT64, []), helper.make_tensor_value_info('cond_in', TP.BOOL, [])],
        [helper.make_tensor_value_info('cond_out', TP.BOOL, [])],
        initializer=[helper.make_tensor('loop_w', TP.INT64, [2, 2], [1, -2, 3, -4])])
    else_branch = helper.make_graph(
        [helper.make_node('Loop', ['trip', 'c'], [], body=loop_body)], 'else_branch', [],
        [helper.make_tensor_value_info('y', TP.FLOAT, [None])],
        initializer=[numpy_helper.from_array(np.array([0.25, 0.5], dtype=np.float32), 'else_w')])
    then_branch = helper.make_graph(
        [helper.make_node('Identity', ['then_w'], ['y'])], 'then_branch', [],
        [helper.make_tensor_value_info('y', TP.FLOAT, [None])],
        initializer=[numpy_helper.from_array(rng.standard_normal((3, 3)).astype(np.float32), 'then_w')])
    node = helper.make_node('If', ['c'], ['y'], then_branch=then_branch, else_branch=else_branch)
    main = graph([node], [numpy_helper.from_array(np.array(True), 'c'),
                          numpy_helper.from_array(np.array(4, dtype=np.int64), 'trip')])
    onnx.save_model(model(main), os.path.join(out, 'model.onnx'))
elif mode == 'constants':
    # Weights in Constant nodes (paddle2onnx, spox, OpenVINO, older PyTorch exporters), in every kind
    # of place: the main graph, If branches (both naming a Constant 'k': a repeat), a Loop body, an
    # If nested inside a branch, a model-local function; every value kind; sparse tensors; a tensor
    # attribute of another operator; a typed-field and an external-data Constant.
    def const(name, **value):
        return helper.make_node('Constant', [], [name], **value)
    def sub(nodes, name, inits=()):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info('y', TP.FLOAT, [None])],
                                 initializer=list(inits))
    w = rng.standard_normal((8, 4)).astype(np.float32)
    inner = helper.make_node('If', ['c'], ['z'], then_branch=sub([const('deep', value=numpy_helper.from_array(
        rng.standard_normal((2, 3)).astype(np.float16), 'ignored'))], 'deep_then'),
        else_branch=sub([const('deep_i', value_ints=[7, -8, 9])], 'deep_else'))
    then_branch = sub([const('k', value=numpy_helper.from_array(w, '')), inner], 'then_branch')
    else_branch = sub([const('k', value_floats=[0.5, -1.25, 3.0]),
                       helper.make_node('Loop', ['trip', 'c'], [], body=helper.make_graph(
                           [const('loop_k', value_int=-5)], 'body',
                           [helper.make_tensor_value_info('i', TP.INT64, []),
                            helper.make_tensor_value_info('cond_in', TP.BOOL, [])],
                           [helper.make_tensor_value_info('cond_out', TP.BOOL, [])]))], 'else_branch',
                      [numpy_helper.from_array(np.arange(6, dtype=np.int32), 'else_init')])
    sparse_values = numpy_helper.from_array(np.array([1.5, -2.5, 4.0], dtype=np.float32), 'sp')
    sparse_indices = numpy_helper.from_array(np.array([1, 5, 7], dtype=np.int64), 'sp_idx')
    sparse = helper.make_sparse_tensor(sparse_values, sparse_indices, [10])
    typed = helper.make_tensor('typed', TP.INT64, [3], [1, -2, 300000])  # int64_data, not raw
    ext = numpy_helper.from_array(rng.standard_normal((16,)).astype(np.float32), 'ext')
    with open(os.path.join(out, 'ext.bin'), 'wb') as f:
        f.write(ext.raw_data)
    set_external_data(ext, 'ext.bin')
    ext.ClearField('raw_data'); ext.data_location = TP.EXTERNAL
    nodes = [const('scalar_f', value_float=2.5), const('scalar_i', value_int=123456789012),
             const('list_i', value_ints=[1, 2, 3, -4]), const('list_f', value_floats=[1.0, 2.0]),
             const('label', value_string='hello'), const('typed_c', value=typed), const('ext_c', value=ext),
             const('sparse_c', sparse_value=sparse),
             helper.make_node('ConstantOfShape', ['shape'], ['filled'], name='fill',
                              value=numpy_helper.from_array(np.array([0.75], dtype=np.float32), 'v')),
             helper.make_node('If', ['c'], ['y'], name='branch', then_branch=then_branch, else_branch=else_branch),
             helper.make_node('Scale', ['y'], ['y2'], domain='local')]
    main = graph(nodes, [numpy_helper.from_array(np.array(True), 'c'),
                         numpy_helper.from_array(np.array(2, dtype=np.int64), 'trip')])
    main.sparse_initializer.append(helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([9, 8], dtype=np.int32), 'sparse_init'),
        numpy_helper.from_array(np.array([[0, 1], [2, 3]], dtype=np.int64), 'sparse_init_idx'), [4, 4]))
    fn = helper.make_function('local', 'Scale', ['a'], ['b'],
                              [const('fn_k', value=numpy_helper.from_array(np.array([3.0], dtype=np.float32), '')),
                               helper.make_node('Mul', ['a', 'fn_k'], ['b'])],
                              [helper.make_opsetid('', 17)])
    m = model(main)
    m.functions.append(fn)
    m.opset_import.append(helper.make_opsetid('local', 1))
    onnx.save_model(m, os.path.join(out, 'model.onnx'))
elif mode == 'typed':
    # Typed fields (make_tensor without raw=True), as older exporters write small constants.
    T = helper.make_tensor
    inits = [
        T('f32', TP.FLOAT, [2, 3], [1.5, -2, 3, 4, 5, 6.25]),
        T('f64', TP.DOUBLE, [3], [1e300, -0.5, 2]),
        T('i8', TP.INT8, [4], [-1, 2, -128, 127]),
        T('u8', TP.UINT8, [3], [0, 200, 255]),
        T('i16', TP.INT16, [2], [-30000, 12345]),
        T('u16', TP.UINT16, [2], [65535, 1]),
        T('i32', TP.INT32, [3], [-2147483648, 0, 2147483647]),
        T('i64', TP.INT64, [2, 2], [-(2**63), -1, 0, 2**63 - 1]),
        T('u32', TP.UINT32, [2], [4000000000, 7]),
        T('u64', TP.UINT64, [2], [2**64 - 1, 3]),
        T('bool', TP.BOOL, [3], [True, False, True]),
        T('f16', TP.FLOAT16, [3], np.array([1.0, -2.0, 65504], dtype=np.float16)),
        T('bf16', TP.BFLOAT16, [2], [1.0, -3.0]),
        T('c64', TP.COMPLEX64, [2], [1 + 2j, 3 - 4j]),
        T('scalar', TP.INT64, [], [42]),
        T('empty', TP.FLOAT, [0, 4], []),
        T('strings', TP.STRING, [2], [b'ab', b'cde']),
    ]
    onnx.save_model(model(graph([helper.make_node('Identity', ['x'], ['y'])], inits)),
                    os.path.join(out, 'model.onnx'))
else:
    sys.exit('unknown mode ' + mode)
)PY";

std::string run_python(const fs::path& dir, const char* script, const std::string& args) {
  const fs::path file = dir / "script.py";
  test::write_file(file, std::string_view(script));
  std::string out;
  const int status = test::run_command(std::string(test::kPython) + " " + file.string() + " " + args, &out);
  REQUIRE_MESSAGE(status == 0, "python failed: ", args, "\n", out);
  return out;
}

void generate(const fs::path& dir, const std::string& mode) {
  TempDir scratch;
  run_python(scratch.path(), kGeneratorScript, mode + " " + dir.string());
}

std::string hex(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += digits[static_cast<unsigned>(b) >> 4];
    out += digits[static_cast<unsigned>(b) & 15];
  }
  return out;
}

// The tensor's stored bytes as a loader would produce them: the pieces, decoded if encoded.
std::vector<std::byte> tensor_bytes_of(const Manifest& m, const TensorInfo& t) {
  std::vector<std::byte> encoded;
  for (const auto& p : t.pieces) {
    const auto part = test::read_range(m.files.at(p.file), p.offset, p.length);
    encoded.insert(encoded.end(), part.begin(), part.end());
  }
  if (t.encoding == Encoding::raw) return encoded;
  std::vector<std::byte> out(t.bytes);
  formats::decode_tensor(t, encoded, out, m.files.at(0));
  return out;
}

DType dtype_of_onnx(int code) {
  static const std::map<int, DType> table{{1, DType::F32},  {2, DType::U8},   {3, DType::I8},    {4, DType::U16},
                                          {5, DType::I16},  {6, DType::I32},  {7, DType::I64},   {8, DType::STRING},
                                          {9, DType::BOOL}, {10, DType::F16}, {11, DType::F64},  {12, DType::U32},
                                          {13, DType::U64}, {14, DType::C64}, {15, DType::C128}, {16, DType::BF16}};
  return table.at(code);
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(line);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!line.empty() && line.back() == sep) parts.emplace_back();
  return parts;
}

// Opens `model` with lwload and checks every initializer against what python3-onnx reads.
Manifest check_against_onnx(const fs::path& model) {
  const Manifest m = open_manifest(model);
  CHECK(m.format == "onnx");
  TempDir scratch;
  std::istringstream lines(run_python(scratch.path(), kReferenceScript, model.string()));
  std::string line;
  std::size_t count = 0;
  while (std::getline(lines, line)) {
    const auto cols = split(line, '\t');
    REQUIRE(cols.size() == 4);
    ++count;
    INFO("tensor ", cols[0]);
    const TensorInfo* t = m.find(cols[0]);
    REQUIRE(t != nullptr);
    CHECK(t->dtype == dtype_of_onnx(std::stoi(cols[1])));
    std::vector<std::int64_t> dims;
    for (const auto& d : split(cols[2], ',')) dims.push_back(std::stoll(d));
    CHECK(t->shape == dims);
    if (t->dtype == DType::STRING) {
      CHECK(t->pieces.empty());
      continue;
    }
    const auto bytes = tensor_bytes_of(m, *t);
    CHECK(bytes.size() == t->bytes);
    CHECK(hex(bytes) == (cols[3] == "-" ? "" : cols[3]));
  }
  CHECK(count == m.tensors.size());
  CHECK(count > 0);
  return m;
}

const MetaValue* meta(const Manifest& m, std::string_view key) {
  for (const auto& e : m.metadata)
    if (e.key == key) return &e.value;
  return nullptr;
}

// ---- hand-built protobuf for malformed input ---------------------------------------------------

struct Proto {
  std::vector<std::byte> bytes;

  Proto& raw_varint(std::uint64_t v) {
    do {
      std::uint8_t b = v & 0x7f;
      v >>= 7;
      if (v) b |= 0x80;
      test::put_u8(bytes, b);
    } while (v);
    return *this;
  }
  Proto& tag(std::uint32_t field, int wire) { return raw_varint((std::uint64_t{field} << 3) | wire); }
  Proto& varint(std::uint32_t field, std::uint64_t v) { return tag(field, 0).raw_varint(v); }
  Proto& len(std::uint32_t field, std::string_view payload) {
    tag(field, 2).raw_varint(payload.size());
    test::put_bytes(bytes, payload);
    return *this;
  }
  Proto& len(std::uint32_t field, const Proto& message) { return len(field, message.str()); }
  std::string str() const { return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()); }
};

Proto entry(std::string_view key, std::string_view value) { return Proto().len(1, key).len(2, value); }

// A float tensor 'w' of shape [2] (8 bytes) with the given data fields appended.
Proto tensor_w(const Proto& data, std::int64_t dim = 2, std::uint64_t data_type = 1) {
  Proto t;
  t.varint(1, static_cast<std::uint64_t>(dim)).varint(2, data_type).len(8, "w");
  t.bytes.insert(t.bytes.end(), data.bytes.begin(), data.bytes.end());
  return t;
}

Proto model_with(const Proto& tensor) { return Proto().varint(1, 8).len(7, Proto().len(2, "g").len(5, tensor)); }

Proto raw8() { return Proto().len(9, std::string(8, '\x01')); }

Proto external(std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  Proto p;
  for (const auto& [k, v] : entries) p.len(13, entry(k, v));
  return p.varint(14, 1);
}

// Writes `model` as DIR/model.onnx and expects open_manifest to fail with `code` and a message
// containing every one of `parts`.
void expect_error(const fs::path& dir, const Proto& model, ErrorCode code,
                  std::initializer_list<std::string_view> parts) {
  const fs::path file = dir / "model.onnx";
  test::write_file(file, std::as_bytes(std::span(model.bytes)));
  try {
    open_manifest(file);
    FAIL("no error");
  } catch (const Error& e) {
    INFO("message: ", std::string(e.what()));
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    for (auto part : parts) CHECK(std::string(e.what()).find(part) != std::string::npos);
  }
}

using test::CountingFileSystem;

}  // namespace

TEST_CASE("onnx: mlp_inline.onnx matches python3-onnx, raw_data at its exact offsets") {
  const fs::path model = test::testdata() / "onnx" / "mlp_inline.onnx";
  const Manifest m = check_against_onnx(model);
  REQUIRE(m.files.size() == 1);
  CHECK(m.files[0] == model);
  CHECK(m.tensors.size() == 4);
  const TensorInfo* w = m.find("fc1.weight");
  REQUIRE(w);
  CHECK(w->dtype == DType::F32);
  CHECK(w->shape == std::vector<std::int64_t>{64, 128});
  CHECK(w->bytes == 32768);
  REQUIRE(w->pieces.size() == 1);
  CHECK(w->pieces[0].file == 0);
  CHECK(m.find("fc2.weight")->dtype == DType::F16);
  CHECK(m.find("shape_const")->dtype == DType::I64);
  // Metadata: what onnx.save wrote.
  REQUIRE(meta(m, "ir_version"));
  CHECK(std::get<std::int64_t>(meta(m, "ir_version")->value) == 8);
  CHECK(std::get<std::string>(meta(m, "producer_name")->value) == "onnx-python");
  CHECK(std::get<std::int64_t>(meta(m, "opset.ai.onnx")->value) == 17);
}

TEST_CASE("onnx: mlp_external/ — external weights.bin pieces, also opened as a folder") {
  const fs::path dir = test::testdata() / "onnx" / "mlp_external";
  const Manifest m = check_against_onnx(dir / "model.onnx");
  REQUIRE(m.files.size() == 2);
  CHECK(m.files[1] == dir / "weights.bin");
  const TensorInfo* w1 = m.find("fc1.weight");
  REQUIRE(w1->pieces.size() == 1);
  CHECK(w1->pieces[0].file == 1);
  CHECK(w1->pieces[0].offset == 0);
  CHECK(w1->pieces[0].length == 32768);
  const TensorInfo* w2 = m.find("fc2.weight");
  CHECK(w2->pieces.at(0).file == 1);
  CHECK(w2->pieces.at(0).offset == 32768);
  CHECK(m.find("fc1.bias")->pieces.at(0).file == 0);  // the small one stayed inline

  const Manifest folder = open_manifest(dir);
  CHECK(folder.format == "onnx");
  CHECK(folder.tensors.size() == m.tensors.size());
  CHECK(folder.files.at(0) == dir / "model.onnx");
}

TEST_CASE("onnx: external data in several files (onnx's writer and hand-placed offsets)") {
  TempDir tool;
  generate(tool.path(), "external_tool");
  const Manifest a = check_against_onnx(tool / "model.onnx");
  CHECK(a.files.size() == 4);  // model.onnx + one file per tensor
  for (const auto& t : a.tensors) CHECK(t.pieces.at(0).file >= 1);
  CHECK(std::get<std::string>(meta(a, "author")->value) == "f3");
  CHECK(std::get<std::int64_t>(meta(a, "opset.com.microsoft")->value) == 1);
  CHECK(std::get<std::int64_t>(meta(a, "model_version")->value) == 3);
  CHECK(std::get<std::string>(meta(a, "producer_version")->value) == "9.9");

  TempDir manual;
  generate(manual.path(), "external_manual");
  const Manifest b = check_against_onnx(manual / "model.onnx");
  REQUIRE(b.files.size() == 3);
  CHECK(b.files[1] == manual / "a.bin");
  CHECK(b.files[2] == manual / "data" / "shared.bin");
  CHECK(b.find("b")->pieces.at(0).file == 2);
  CHECK(b.find("c")->pieces.at(0).offset == 4096);
  CHECK(b.find("c")->pieces.at(0).length == 5 * 3 * 8);  // length defaulted to dtype × shape
  CHECK(b.find("d")->pieces.at(0).file == 0);
}

TEST_CASE("onnx: initializers of If and Loop subgraphs") {
  TempDir dir;
  generate(dir.path(), "subgraphs");
  const Manifest m = check_against_onnx(dir / "model.onnx");
  CHECK(m.tensors.size() == 5);
  for (auto name : {"c", "trip", "then_w", "else_w", "loop_w"}) CHECK(m.find(name) != nullptr);
  CHECK(m.find("loop_w")->encoding == Encoding::onnx_varint);
  CHECK(m.find("c")->dtype == DType::BOOL);
}

TEST_CASE("onnx: weights in Constant nodes, in every graph, subgraph and function, load exactly") {
  TempDir dir;
  generate(dir.path(), "constants");
  const fs::path model = dir / "model.onnx";
  const Manifest m = open_manifest(model);
  const auto device = open_device("host");
  const Weights w = load(m, *device);
  // The independent reader the real-file suite uses (python3-onnx).
  CHECK(test::check_against_reference(model, "onnx", m, w) == 21);
  // Where each came from, and the names that had to be made unique.
  // (make_node sorts attributes by name: else_branch comes first in the file.)
  CHECK(*m.find("k")->origin == "Constant node 'k' in the 'else_branch' graph of node #9 'branch' (If)");
  CHECK(*m.find("k#2")->origin == "Constant node 'k' in the 'then_branch' graph of node #9 'branch' (If)");
  CHECK(*m.find("fn_k")->origin == "Constant node 'fn_k' in function 'Scale'");
  CHECK(m.find("fill.value")->origin->find("attribute 'value' of node 'fill' (ConstantOfShape)") == 0);
  CHECK(m.find("sparse_c.indices") != nullptr);
  CHECK(m.find("sparse_init.values") != nullptr);
  CHECK(m.find("scalar_f")->encoding == Encoding::raw);  // value_float: its four bytes, mapped
  CHECK(m.find("k")->encoding == Encoding::onnx_fixed);  // unpacked value_floats
  CHECK(m.find("k#2")->encoding == Encoding::raw);       // a raw TensorProto: zero_copy material
  CHECK(m.find("list_i")->encoding == Encoding::onnx_varint);
  CHECK(w.find("k#2")->placement == Placement::zero_copy);
  CHECK(verify(w).tensors == w.tensors().size() - 1);  // all but the STRING constant
}

TEST_CASE("onnx: typed fields decode to numpy's bytes; packed floats are raw pieces") {
  TempDir dir;
  generate(dir.path(), "typed");
  const Manifest m = check_against_onnx(dir / "model.onnx");
  CHECK(m.find("f32")->encoding == Encoding::raw);  // packed float_data is the bytes already
  CHECK(m.find("f32")->pieces.size() == 1);
  CHECK(m.find("f64")->encoding == Encoding::raw);
  CHECK(m.find("c64")->encoding == Encoding::raw);
  for (auto name : {"i8", "u8", "i16", "u16", "i32", "i64", "u32", "u64", "bool", "f16", "bf16", "scalar"}) {
    INFO(std::string(name));
    CHECK(m.find(name)->encoding == Encoding::onnx_varint);
  }
  CHECK(m.find("f16")->dtype == DType::F16);
  CHECK(m.find("bf16")->dtype == DType::BF16);
  CHECK(m.find("u32")->bytes == 8);
  CHECK(m.find("empty")->bytes == 0);
  CHECK(m.find("empty")->pieces.empty());
  const TensorInfo* s = m.find("strings");
  CHECK(s->dtype == DType::STRING);
  CHECK(s->bytes == 0);
}

TEST_CASE("onnx: unpacked float_data decodes as onnx_fixed; mixed with packed runs") {
  TempDir dir;
  // float_data written one tagged fixed32 per element, then a packed run of two more.
  Proto data;
  for (float v : {1.0f, -2.5f}) {
    data.tag(4, 5);
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    test::put_u32(data.bytes, bits);
  }
  std::string packed(8, '\0');
  const float rest[2] = {3.0f, 4.0f};
  std::memcpy(packed.data(), rest, 8);
  data.len(4, packed);
  const Proto model = model_with(tensor_w(data, 4));
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(model.bytes)));
  const Manifest m = open_manifest(dir / "model.onnx");
  const TensorInfo& t = m.tensors.at(0);
  CHECK(t.encoding == Encoding::onnx_fixed);
  const auto bytes = tensor_bytes_of(m, t);
  const float expected[4] = {1.0f, -2.5f, 3.0f, 4.0f};
  CHECK(std::memcmp(bytes.data(), expected, 16) == 0);

  // Unpacked int64 varints too.
  const Proto ints = Proto().varint(7, 5).varint(7, static_cast<std::uint64_t>(-6));
  const Proto model2 = model_with(tensor_w(ints, 2, 7));
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(model2.bytes)));
  const Manifest m2 = open_manifest(dir / "model.onnx");
  const auto v = tensor_bytes_of(m2, m2.tensors.at(0));
  const std::int64_t want[2] = {5, -6};
  CHECK(std::memcmp(v.data(), want, 16) == 0);
}

TEST_CASE("onnx: decode_tensor rejects element counts that do not match the shape") {
  TempDir dir;
  // 3 int64 values for a shape of 4.
  const Proto model =
      model_with(tensor_w(Proto().len(7, Proto().raw_varint(1).raw_varint(2).raw_varint(3).str()), 4, 7));
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(model.bytes)));
  const Manifest m = open_manifest(dir / "model.onnx");
  REQUIRE(m.tensors.at(0).encoding == Encoding::onnx_varint);
  try {
    tensor_bytes_of(m, m.tensors.at(0));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find("tensor 'w'") != std::string::npos);
    CHECK(std::string(e.what()).find("holds 3 elements but I64 shape needs 4") != std::string::npos);
  }
  // Too many elements.
  const Proto model2 =
      model_with(tensor_w(Proto().len(7, Proto().raw_varint(1).raw_varint(2).raw_varint(3).str()), 2, 7));
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(model2.bytes)));
  const Manifest m2 = open_manifest(dir / "model.onnx");
  CHECK_THROWS_WITH_AS(tensor_bytes_of(m2, m2.tensors.at(0)), doctest::Contains("more elements than"), Error);
}

TEST_CASE("onnx: detection is by content; other formats are not claimed") {
  TempDir dir;
  // A model without the .onnx extension is still ONNX (ir_version first).
  fs::copy_file(test::testdata() / "onnx" / "mlp_inline.onnx", dir / "weights.pb");
  CHECK(open_manifest(dir / "weights.pb").format == "onnx");
  // Samples of the other formats keep their readers.
  CHECK(open_manifest(test::testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf").format == "gguf");
  // Random text named .onnx is not ONNX.
  test::write_file(dir / "junk.onnx", std::string_view("{\"hello\": 1}"));
  CHECK_THROWS_AS(open_manifest(dir / "junk.onnx"), Error);
}

TEST_CASE("onnx: headers only — multi-GiB inline and external tensors are skipped, not read") {
  TempDir dir;
  // 3 inline raw_data tensors of 512 MiB each in a sparse .onnx (1.5 GiB, holes for payloads),
  // plus one 5 GiB tensor at offset 1 GiB in a sparse external file (offsets past 4 GiB).
  constexpr std::uint64_t kInline = 512ull << 20, kExternal = 5ull << 30;
  Proto graph;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> holes;  // (offset in graph payload, length)
  for (int i = 0; i < 3; ++i) {
    Proto t;
    t.varint(1, kInline / 4).varint(2, 1).len(8, "big" + std::to_string(i));
    t.tag(9, 2).raw_varint(kInline);
    graph.tag(5, 2).raw_varint(t.bytes.size() + kInline);
    graph.bytes.insert(graph.bytes.end(), t.bytes.begin(), t.bytes.end());
    holes.emplace_back(graph.bytes.size(), kInline);  // the payload is a hole in the file
  }
  // The external tensor after the inline ones.
  Proto ext;
  ext.varint(1, kExternal / 2).varint(2, 10).len(8, "huge");
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", "huge.bin"},
                             {"offset", std::to_string(1ull << 30)},
                             {"length", std::to_string(kExternal)}})
    ext.len(13, entry(k, v));
  ext.varint(14, 1);
  // Lay out: header bytes with payload holes between them.
  {
    std::uint64_t graph_len = graph.bytes.size() + 3 * kInline;
    Proto ext_field;
    ext_field.len(5, ext);
    graph_len += ext_field.bytes.size();
    Proto head;
    head.varint(1, 8).tag(7, 2).raw_varint(graph_len);
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    out.write(reinterpret_cast<const char*>(head.bytes.data()), static_cast<std::streamsize>(head.bytes.size()));
    std::uint64_t written = 0;
    for (const auto& [at, length] : holes) {
      out.write(reinterpret_cast<const char*>(graph.bytes.data() + written),
                static_cast<std::streamsize>(at - written));
      out.seekp(static_cast<std::streamoff>(length), std::ios::cur);
      written = at;
    }
    out.write(reinterpret_cast<const char*>(ext_field.bytes.data()),
              static_cast<std::streamsize>(ext_field.bytes.size()));
    REQUIRE(out.good());
  }
  { std::ofstream huge(dir / "huge.bin", std::ios::binary); }
  fs::resize_file(dir / "huge.bin", (1ull << 30) + kExternal);

  auto counting = std::make_shared<CountingFileSystem>();
  OpenOptions options;
  options.file_system = counting;
  const Manifest m = open_manifest(dir / "model.onnx", options);
  REQUIRE(m.tensors.size() == 4);
  CHECK(m.tensors[0].bytes == kInline);
  CHECK(m.tensors[3].pieces.at(0).offset == 1ull << 30);
  CHECK(m.tensors[3].pieces.at(0).length == kExternal);
  CHECK(m.tensors[3].pieces.at(0).file == 1);
  // Header bytes only: a small window per tensor header, never the payloads.
  MESSAGE("bytes read for a ", fs::file_size(dir / "model.onnx"), "-byte .onnx: ", counting->bytes_read);
  CHECK(counting->bytes_read < 8 * 1024);
  // Listing its TensorProtos (lwload/onnx.hpp) and writing its weightless graph read headers too.
  counting->bytes_read = 0;
  const std::vector<OnnxConstant> constants = onnx_constants(m);
  CHECK(constants.size() == 4);
  const WeightlessGraph weightless =
      onnx_weightless_graph(m, [&](const OnnxConstant& c) -> std::optional<DataReference> {
        return DataReference{"elsewhere.bin", m.tensors[c.tensor].pieces.at(0).offset};
      });
  CHECK(weightless.left_out.size() == 4);
  CHECK(weightless.model.size() < 4096);
  MESSAGE("bytes read to list the constants and write the weightless graph: ", counting->bytes_read);
  CHECK(counting->bytes_read < 16 * 1024);
  // The inline payload pieces point where raw_data's bytes begin.
  std::uint64_t expect = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& p = m.tensors[static_cast<std::size_t>(i)].pieces.at(0);
    CHECK(p.length == kInline);
    CHECK(p.offset > expect);
    expect = p.offset + p.length;
  }
}

TEST_CASE("onnx: headers only — many small inline tensors are not read either") {
  // 2,000 initializers of 4 KiB each (8 MiB): a plain 64 KiB read-ahead would fetch nearly all of
  // it; the scanner's windows fetch a few hundred bytes per tensor.
  TempDir dir;
  Proto graph;
  for (int i = 0; i < 2000; ++i) {
    Proto t;
    t.varint(1, 1024).varint(2, 1).len(8, "layer." + std::to_string(i) + ".weight");
    t.len(9, std::string(4096, static_cast<char>(i)));
    graph.len(5, t);
  }
  const Proto model = Proto().varint(1, 8).len(7, graph);
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(model.bytes)));
  auto counting = std::make_shared<CountingFileSystem>();
  OpenOptions options;
  options.file_system = counting;
  const Manifest m = open_manifest(dir / "model.onnx", options);
  REQUIRE(m.tensors.size() == 2000);
  const auto& last = m.tensors.back();
  CHECK(last.name == "layer.1999.weight");
  CHECK(test::read_range(dir / "model.onnx", last.pieces.at(0).offset, 4096) ==
        std::vector<std::byte>(4096, static_cast<std::byte>(1999 & 0xff)));
  MESSAGE("bytes read for ", model.bytes.size(), " bytes of 2,000 tensors: ", counting->bytes_read);
  CHECK(counting->bytes_read < model.bytes.size() / 10);
}

TEST_CASE("onnx: external data without a length, in a longer file, is what python3-onnx refuses too") {
  // The reference's reading of the case lwload refuses (and of the one it loads), from onnx itself.
  TempDir dir;
  const fs::path d = dir.path();
  test::write_file(d / "w.bin", std::string_view("0123456789abcdef"));
  const fs::path script = d / "read.py";
  test::write_file(
      script,
      std::string_view("import sys, onnx\nfrom onnx import numpy_helper\n"
                       "m = onnx.load(sys.argv[1])\nprint(numpy_helper.to_array(m.graph.initializer[0]).nbytes)\n"));
  auto onnx_reads = [&](const Proto& ext, std::string* out) {
    const Proto model = model_with(tensor_w(ext));
    test::write_file(d / "model.onnx", std::as_bytes(std::span(model.bytes)));
    return test::run_command(
               std::string(test::kPython) + " " + script.string() + " " + (d / "model.onnx").string() + " 2>&1", out) ==
           0;
  };
  std::string out;
  CHECK_FALSE(onnx_reads(external({{"location", "w.bin"}, {"offset", "0"}}), &out));
  CHECK_MESSAGE(out.find("cannot reshape array of size 4 into shape (2,)") != std::string::npos, out);
  CHECK_THROWS_AS(open_manifest(d / "model.onnx"), Error);
  out.clear();
  CHECK(onnx_reads(external({{"location", "w.bin"}, {"offset", "8"}}), &out));
  CHECK_MESSAGE(out.find("8") != std::string::npos, out);
  CHECK(open_manifest(d / "model.onnx").tensors.at(0).pieces.at(0).offset == 8);
}

TEST_CASE("onnx: malformed input — each class gives bad_input naming file, tensor, field, value") {
  TempDir dir;
  const fs::path d = dir.path();
  test::write_file(d / "w.bin", std::string_view("0123456789abcdef"));

  SUBCASE("baseline is valid") {
    const Proto model = model_with(tensor_w(raw8()));
    test::write_file(d / "model.onnx", std::as_bytes(std::span(model.bytes)));
    CHECK(open_manifest(d / "model.onnx").tensors.at(0).bytes == 8);
  }
  SUBCASE("truncated file") {
    Proto model = model_with(tensor_w(raw8()));
    model.bytes.resize(model.bytes.size() - 3);
    expect_error(d, model, ErrorCode::bad_input, {"ModelProto: field 7 (graph)", "runs past the end of its message"});
  }
  SUBCASE("truncated inside a varint") {
    Proto model = Proto().varint(1, 8).len(7, Proto().len(2, "g").len(5, tensor_w(raw8())));
    model.tag(5, 0);
    model.bytes.push_back(std::byte{0x80});
    expect_error(d, model, ErrorCode::bad_input, {"ModelProto", "truncated"});
  }
  SUBCASE("length-delimited field running past its parent") {
    Proto tensor = tensor_w(Proto());
    tensor.tag(9, 2).raw_varint(40);  // claims 40 bytes; the tensor message ends here
    Proto graph = Proto().len(5, tensor);
    test::put_bytes(graph.bytes, std::string(64, '\0'));  // bytes exist, but belong to the graph
    expect_error(d, Proto().varint(1, 8).len(7, graph), ErrorCode::bad_input,
                 {"initializer #0", "field 9 (raw_data)", "length 40", "runs past the end of its message"});
  }
  SUBCASE("bad varint") {
    Proto tensor = tensor_w(Proto());
    tensor.tag(2, 0);
    for (int i = 0; i < 11; ++i) tensor.bytes.push_back(std::byte{0xff});
    tensor.bytes.push_back(std::byte{0x01});
    expect_error(d, model_with(tensor), ErrorCode::bad_input, {"initializer #0", "varint"});
  }
  SUBCASE("wire type 3 (group)") {
    Proto tensor = tensor_w(raw8());
    tensor.tag(20, 3);
    expect_error(d, model_with(tensor), ErrorCode::bad_input, {"wire type 3", "groups"});
  }
  SUBCASE("unknown data_type") {
    expect_error(d, model_with(tensor_w(raw8(), 2, 99)), ErrorCode::bad_input,
                 {"tensor 'w'", "data_type", "99 is not an ONNX data type"});
  }
  SUBCASE("FNUZ / UINT4 data types are unsupported, named") {
    expect_error(d, model_with(tensor_w(raw8(), 2, 18)), ErrorCode::unsupported, {"FLOAT8E4M3FNUZ"});
    expect_error(d, model_with(tensor_w(raw8(), 2, 21)), ErrorCode::unsupported, {"UINT4"});
  }
  SUBCASE("negative dims") {
    expect_error(d, model_with(tensor_w(raw8(), -2)), ErrorCode::bad_input,
                 {"tensor 'w'", "field dims", "dimension 0 is negative (-2)"});
  }
  SUBCASE("raw_data length differs from dtype x shape") {
    expect_error(d, model_with(tensor_w(Proto().len(9, "1234567"))), ErrorCode::bad_input,
                 {"tensor 'w'", "needs 8 bytes but the file stores 7"});
  }
  SUBCASE("no data for a non-empty tensor") {
    expect_error(d, model_with(tensor_w(Proto())), ErrorCode::bad_input, {"tensor 'w'", "no data"});
  }
  SUBCASE("data in two fields") {
    Proto data = raw8();
    data.len(4, std::string(8, '\0'));
    expect_error(d, model_with(tensor_w(data)), ErrorCode::bad_input, {"both raw_data and float_data"});
  }
  SUBCASE("typed field that cannot hold the dtype") {
    expect_error(d, model_with(tensor_w(Proto().len(4, std::string(16, '\0')), 2, 7)), ErrorCode::bad_input,
                 {"tensor 'w'", "float_data", "cannot hold I64", "int64_data"});
  }
  SUBCASE("segmented tensor") {
    Proto data = raw8();
    data.len(3, Proto().varint(1, 0).varint(2, 2).str());
    expect_error(d, model_with(tensor_w(data)), ErrorCode::unsupported, {"tensor 'w'", "segment"});
  }
  SUBCASE("external offset/length past the end of the file") {
    expect_error(d, model_with(tensor_w(external({{"location", "w.bin"}, {"offset", "12"}}))), ErrorCode::bad_input,
                 {"w.bin", "tensor 'w'", "[12, 20)", "past the end of the file (16 bytes)"});
  }
  SUBCASE("external data without a length (or with length 0) in a file longer than the tensor") {
    // onnx reads from the offset to the end of the file (16 bytes for an 8-byte tensor) and refuses;
    // taking the first 8 bytes would load what the reference does not: refused as ambiguous.
    for (const auto& offset : {std::string_view(), std::string_view("0")}) {
      CAPTURE(offset);
      const Proto ext =
          offset.empty() ? external({{"location", "w.bin"}}) : external({{"location", "w.bin"}, {"offset", offset}});
      expect_error(d, model_with(tensor_w(ext)), ErrorCode::bad_input,
                   {"tensor 'w'", "field external_data", "no 'length'", "onnx reads from offset 0 to the end of",
                    "(16 bytes) but the tensor is 8 bytes", "ambiguous"});
    }
    expect_error(d, model_with(tensor_w(external({{"location", "w.bin"}, {"offset", "4"}, {"length", "0"}}))),
                 ErrorCode::bad_input, {"tensor 'w'", "length 0", "onnx reads from offset 4", "(12 bytes)"});
    // Where the rest of the file is the tensor, onnx and lwload read the same bytes.
    const Proto ok = model_with(tensor_w(external({{"location", "w.bin"}, {"offset", "8"}, {"length", "0"}})));
    test::write_file(d / "model.onnx", std::as_bytes(std::span(ok.bytes)));
    CHECK(open_manifest(d / "model.onnx").tensors.at(0).pieces.at(0).offset == 8);
  }
  SUBCASE("an external_data key given twice") {
    // onnx keeps the last value (ExternalDataInfo sets each key in turn): which one is meant is
    // the file's ambiguity, refused naming the key.
    for (const char* key : {"location", "offset", "length"}) {
      CAPTURE(key);
      Proto ext;
      ext.len(13, entry("location", "w.bin")).len(13, entry("offset", "8")).len(13, entry("length", "8"));
      ext.len(13, entry(key, std::string_view(key) == "location" ? "w.bin" : "0"));
      expect_error(d, model_with(tensor_w(ext.varint(14, 1))), ErrorCode::bad_input,
                   {"tensor 'w'", "field external_data", str("key '", key, "' appears twice")});
    }
  }
  SUBCASE("external offset + length overflows 64 bits") {
    expect_error(
        d, model_with(tensor_w(external({{"location", "w.bin"}, {"offset", "18446744073709551610"}, {"length", "8"}}))),
        ErrorCode::bad_input, {"tensor 'w'", "18446744073709551610", "overflows 64 bits"});
  }
  SUBCASE("external length differs from dtype x shape") {
    expect_error(d, model_with(tensor_w(external({{"location", "w.bin"}, {"length", "12"}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "needs 8 bytes but the file stores 12"});
  }
  SUBCASE("external offset not a number") {
    expect_error(d, model_with(tensor_w(external({{"location", "w.bin"}, {"offset", "-4"}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "offset '-4' is not a decimal byte count"});
  }
  SUBCASE("missing external file") {
    expect_error(d, model_with(tensor_w(external({{"location", "nope.bin"}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "nope.bin", "does not exist"});
  }
  SUBCASE("location escaping the folder") {
    expect_error(d, model_with(tensor_w(external({{"location", "sub/../../w.bin"}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "sub/../../w.bin", "escapes the model folder"});
  }
  SUBCASE("absolute location") {
    expect_error(d, model_with(tensor_w(external({{"location", (d / "w.bin").string()}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "must be a relative path"});
  }
  SUBCASE("unknown external_data key; checksum is accepted") {
    expect_error(d, model_with(tensor_w(external({{"location", "w.bin"}, {"sha256", "x"}}))), ErrorCode::bad_input,
                 {"tensor 'w'", "field external_data at offset 16", "unknown key 'sha256'"});
    const Proto ok = model_with(tensor_w(external({{"location", "w.bin"}, {"checksum", "abc"}, {"offset", "8"}})));
    test::write_file(d / "model.onnx", std::as_bytes(std::span(ok.bytes)));
    const Manifest m = open_manifest(d / "model.onnx");
    CHECK(m.tensors.at(0).pieces.at(0).offset == 8);
    CHECK(m.files.at(1) == d / "w.bin");
  }
  SUBCASE("EXTERNAL without external_data") {
    expect_error(d, model_with(tensor_w(Proto().varint(14, 1))), ErrorCode::bad_input,
                 {"tensor 'w'", "data_location", "no external_data"});
  }
  SUBCASE("subgraphs nested too deep") {
    Proto graph = Proto().len(2, "leaf").len(5, tensor_w(raw8()));
    for (int i = 0; i < 70; ++i) {
      const Proto attribute = Proto().len(1, "then_branch").len(6, graph);
      const Proto node = Proto().len(4, "If").len(5, attribute);
      graph = Proto().len(1, node);
    }
    expect_error(d, Proto().varint(1, 8).len(7, graph), ErrorCode::bad_input,
                 {"node #0 (If) attribute 'then_branch' (subgraph depth 65)", "nested more than 64 deep"});
  }
  SUBCASE("no graph") { expect_error(d, Proto().varint(1, 8).len(2, "x"), ErrorCode::bad_input, {"no graph"}); }
}

TEST_CASE("onnx: lwload inspect --json reports pieces and encodings; exit 3 on bad input") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!lwload::test::have_exe()) return;
  std::string out;
  const fs::path model = test::testdata() / "onnx" / "mlp_external" / "model.onnx";
  CHECK(test::run_command(std::string(exe) + " inspect --json " + model.string(), &out) == 0);
  CHECK(out.find("\"format\":\"onnx\"") != std::string::npos);
  CHECK(out.find("weights.bin") != std::string::npos);

  TempDir dir;
  const Proto bad = model_with(tensor_w(Proto().len(9, "1234567")));
  test::write_file(dir / "model.onnx", std::as_bytes(std::span(bad.bytes)));
  CHECK(test::run_command(std::string(exe) + " inspect " + (dir / "model.onnx").string() + " 2>/dev/null") == 3);
}

TEST_CASE("onnx: BOOL values above 1 in int32_data are True, as numpy_helper reads them") {
  TempDir dir;
  run_python(dir.path(), R"PY(
import sys, onnx
from onnx import helper, TensorProto as TP
t = TP()
t.name, t.data_type = 'b', TP.BOOL
t.dims.extend([6])
t.int32_data.extend([0, 1, 2, 256, -1, -2147483648])
g = helper.make_graph([helper.make_node('Identity', ['b'], ['y'])], 'g', [], [helper.make_tensor_value_info('y', TP.BOOL, [6])], [t])
onnx.save(helper.make_model(g), sys.argv[1])
)PY",
             (dir / "bool.onnx").string());
  const Manifest m = check_against_onnx(dir / "bool.onnx");
  const auto bytes = tensor_bytes_of(m, *m.find("b"));
  CHECK(hex(bytes) == "000101010101");
}

TEST_CASE("onnx: a repeated initializer name in one graph is refused, as the onnx checker refuses it") {
  TempDir dir;
  const Proto w = tensor_w(raw8());
  const Proto model = Proto().varint(1, 8).len(7, Proto().len(2, "g").len(5, w).len(5, w));
  expect_error(dir.path(), model, ErrorCode::bad_input,
               {"initializer name 'w' is not unique in its graph", "initializer #1"});
  // onnx's own writer and checker: the checker refuses such a model, and so does lwload.
  run_python(dir.path(), R"PY(
import sys, onnx, numpy as np
from onnx import helper, numpy_helper
w = numpy_helper.from_array(np.ones(2, dtype=np.float32), 'w')
m = helper.make_model(helper.make_graph([], 'g', [], [], [w, w]))
try:
    onnx.checker.check_model(m)
    sys.exit('the checker accepted it')
except onnx.checker.ValidationError as e:
    assert 'w initializer name is not unique' in str(e), str(e)
onnx.save(m, sys.argv[1])
)PY",
             (dir / "dup.onnx").string());
  const Error e = test::error_of([&] { open_manifest(dir / "dup.onnx"); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()).find("initializer name 'w' is not unique") != std::string::npos);
  // A sparse initializer whose values share an initializer's name likewise.
  const Proto sparse = Proto()
                           .len(1, tensor_w(raw8()))
                           .len(2, Proto().varint(1, 2).varint(2, 7).len(8, "i").len(9, std::string(16, '\0')))
                           .varint(3, 4);
  expect_error(dir.path(), Proto().varint(1, 8).len(7, Proto().len(2, "g").len(5, w).len(15, sparse)),
               ErrorCode::bad_input, {"initializer name 'w' is not unique"});
}

TEST_CASE("onnx: an attribute whose type names another field than its value is refused") {
  TempDir dir;
  // Constant node 'c' whose `value` attribute holds a tensor (field t) but says type INT (2).
  const Proto attribute = Proto().len(1, "value").len(5, tensor_w(raw8())).varint(20, 2);
  const Proto node = Proto().len(2, "c").len(4, "Constant").len(5, attribute);
  expect_error(dir.path(), Proto().varint(1, 8).len(7, Proto().len(1, node).len(2, "g")), ErrorCode::bad_input,
               {"attribute 'value': field type is 2 but its value is in field t"});
  // Two value fields in one attribute.
  const Proto both = Proto().len(1, "value").len(5, tensor_w(raw8())).varint(3, 7).varint(20, 4);
  expect_error(
      dir.path(),
      Proto().varint(1, 8).len(7, Proto().len(1, Proto().len(2, "c").len(4, "Constant").len(5, both)).len(2, "g")),
      ErrorCode::bad_input, {"holds values in both t and i"});
  // The agreeing attribute loads.
  const Proto good = Proto().len(1, "value").len(5, tensor_w(raw8())).varint(20, 4);
  const fs::path file = dir / "good.onnx";
  const Proto model =
      Proto().varint(1, 8).len(7, Proto().len(1, Proto().len(2, "c").len(4, "Constant").len(5, good)).len(2, "g"));
  test::write_file(file, std::as_bytes(std::span(model.bytes)));
  CHECK(open_manifest(file).find("c") != nullptr);
}

TEST_CASE("onnx: a folder holding one model of any name with its external data opens; two models are named") {
  TempDir dir;
  fs::create_directories(dir / "net");
  run_python(dir.path(), R"PY(
import sys, onnx, numpy as np
from onnx import helper, numpy_helper
w = numpy_helper.from_array(np.arange(4096, dtype=np.float32), 'w')
g = helper.make_graph([helper.make_node('Identity', ['w'], ['y'])], 'g', [], [helper.make_tensor_value_info('y', 1, [4096])], [w])
onnx.save(helper.make_model(g), sys.argv[1] + '/silero.onnx', save_as_external_data=True, location='silero.onnx.data', size_threshold=0)
)PY",
             (dir / "net").string());
  const Manifest m = open_manifest(dir / "net");
  CHECK(m.format == "onnx");
  CHECK(m.files.size() == 2);
  CHECK(m.find("w")->bytes == 4096 * 4);
  std::string out;
  CHECK(test::run_lwload("inspect " + (dir / "net").string(), &out) == 0);
  CHECK(out.find("w ") != std::string::npos);
  fs::copy_file(dir / "net" / "silero.onnx", dir / "net" / "other.onnx");
  const Error e = test::error_of([&] { open_manifest(dir / "net"); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()).find("2 ONNX models (other.onnx, silero.onnx)") != std::string::npos);
}
