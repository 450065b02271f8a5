// The PyTorch wing alone: its reader reads a torch.save archive built here (a stored zip of
// data.pkl and one storage record) and refuses another format's model.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cstring>
#include <string>
#include <vector>

#include "formats/pytorch/pytorch.hpp"
#include "lwload/memory_file_system.hpp"
#include "wings/wing_check.hpp"

using namespace lwload;
using namespace std::string_literals;

namespace {

void put(std::vector<std::byte>& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(value >> (8 * i)));
}
void put(std::vector<std::byte>& out, std::string_view text) {
  for (char c : text) out.push_back(static_cast<std::byte>(c));
}

// A stored zip of `records` (name, data); the CRCs are left 0, as a reader that maps checks none.
std::vector<std::byte> stored_zip(const std::vector<std::pair<std::string, std::string>>& records,
                                  std::uint64_t& last_data_offset) {
  std::vector<std::byte> out;
  std::vector<std::uint64_t> offsets;
  for (const auto& [name, data] : records) {
    offsets.push_back(out.size());
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4), put(out, 0, 4);
    put(out, data.size(), 4), put(out, data.size(), 4), put(out, name.size(), 2), put(out, 0, 2);
    put(out, name);
    last_data_offset = out.size();
    put(out, data);
  }
  const std::uint64_t directory = out.size();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& [name, data] = records[i];
    put(out, 0x02014b50, 4), put(out, 20, 2), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4);
    put(out, 0, 4), put(out, data.size(), 4), put(out, data.size(), 4), put(out, name.size(), 2);
    put(out, 0, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4), put(out, offsets[i], 4);
    put(out, name);
  }
  const std::uint64_t directory_size = out.size() - directory;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, records.size(), 2), put(out, records.size(), 2);
  put(out, directory_size, 4), put(out, directory, 4), put(out, 0, 2);
  return out;
}

// torch.save({"w": torch.tensor([1.0, 2.0])}) as protocol 2 writes it: the tensor rebuilt by
// _rebuild_tensor_v2 from persistent id ('storage', FloatStorage, '0', 'cpu', 2).
const std::string kStateDict =
    "\x80\x02}X\x01\x00\x00\x00w"
    "ctorch._utils\n_rebuild_tensor_v2\n"
    "((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
    "0X\x03\x00\x00\x00"
    "cpuK\x02tQ"
    "K\x00K\x02\x85K\x01\x85\x89"
    "ccollections\nOrderedDict\n)RtRs."s;

}  // namespace

TEST_CASE("pytorch wing: its reader alone reads a torch.save archive and refuses another format's") {
  float values[2] = {1.0f, 2.0f};
  std::string storage(sizeof values, '\0');
  std::memcpy(storage.data(), values, sizeof values);
  std::uint64_t data_offset = 0;
  MemoryFileSystem fs;
  fs.add_file("model.pt", stored_zip({{"archive/data.pkl", kStateDict}, {"archive/data/0", storage}}, data_offset));
  REQUIRE(test::check_reads(formats::pytorch_reader, fs, "model.pt") == 1);

  test::WingSource wing(fs, "model.pt");
  const Manifest manifest = formats::pytorch_reader.read(wing.source);
  const TensorInfo& w = manifest.tensors.at(0);
  CHECK(w.name == "w");
  CHECK(w.dtype == DType::F32);
  CHECK(w.shape == std::vector<std::int64_t>{2});
  REQUIRE(w.pieces.size() == 1);
  CHECK(w.pieces[0].offset == data_offset);  // the storage record's bytes, in place
  CHECK(w.pieces[0].length == sizeof values);

  const auto posix = posix_file_system();
  test::check_refuses(formats::pytorch_reader, *posix, test::wing_testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf");
}
