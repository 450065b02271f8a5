// The lwload tool's surface as a user meets it: every boolean flag of every subcommand spelled
// --flag, --flag=true|false|yes|no|1|0 (anything else a usage error naming flag and value), and
// every exit code of the documented table provoked by a real condition.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace fs = std::filesystem;
using lwload::test::TempDir;

namespace {

const char* exe() { return std::getenv("LWLOAD_EXE"); }

// Runs `lwload ARGS`; stdout into *out, stderr into *err. Returns the exit status.
int lwload_run(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  TempDir scratch;
  const fs::path err_path = scratch / "stderr";
  const int status = lwload::test::run_command(std::string(exe()) + " " + args + " 2>" + err_path.string(), out);
  if (err) {
    std::ifstream in(err_path);
    std::ostringstream text;
    text << in.rdbuf();
    *err = text.str();
  }
  return status;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The flags (options without a value) `lwload COMMAND --help` lists: those shown as --name[=B].
std::set<std::string> flags_in_help(const std::string& command) {
  std::string out;
  REQUIRE(lwload_run(command + " --help", &out) == 0);
  std::set<std::string> flags;
  std::istringstream in(out);
  for (std::string word; in >> word;)
    if (word.starts_with("--") && word.ends_with("[=B]")) flags.insert(word.substr(0, word.size() - 4));
  return flags;
}

// A small model to run commands on: 4 tensors, 256 KiB, safetensors.
struct Fixture {
  TempDir dir;
  std::string model = (dir / "m.safetensors").string();
  Fixture() { REQUIRE(lwload_run("synth " + model + " --format safetensors --size 256KiB --tensors 4", nullptr) == 0); }
};

// Each subcommand, the arguments it runs with here, and its flags.
struct Command {
  std::string args;  // "load MODEL --device host"
  std::set<std::string> flags;
};

std::map<std::string, Command> commands(const Fixture& f) {
  const std::string m = f.model;
  return {
      {"inspect", {"inspect " + m, {"--json", "--metadata", "--stats", "--allow-outside-links", "--densify"}}},
      {"devices", {"devices", {"--json"}}},
      {"doctor", {"doctor", {"--json"}}},
      {"plan",
       {"plan " + m + " --device host", {"--json", "--allow-outside-links", "--densify", "--direct-io", "--lazy"}}},
      {"load",
       {"load " + m + " --device host",
        {"--allow-outside-links", "--densify", "--direct-io", "--lazy", "--verify", "--verbose", "--json"}}},
      {"profile",
       {"profile " + m + " --device host",
        {"--allow-outside-links", "--densify", "--direct-io", "--lazy", "--verify"}}},
      {"bench",
       {"bench " + m + " --device host --reps 1 --buffer 64KiB",
        {"--allow-outside-links", "--densify", "--cold", "--lazy", "--no-naive", "--json"}}},
      {"synth", {"synth " + (f.dir / "s.gguf").string() + " --format gguf --size 64KiB --tensors 2", {"--json"}}},
  };
}

// `flag` switches what `on` sees in (stdout, stderr): checked for every spelling of on and of off.
void check_switch(const std::string& args, const std::string& flag,
                  const std::function<bool(const std::string&, const std::string&)>& on) {
  for (const std::string value : {"", "=true", "=1", "=yes"}) {
    CAPTURE(flag + value);
    std::string out, err;
    REQUIRE(lwload_run(args + " " + flag + value, &out, &err) == 0);
    CHECK(on(out, err));
  }
  for (const std::string& given :
       {std::string(), flag + "=false", flag + "=0", flag + "=no", flag + " " + flag + "=no"}) {
    CAPTURE(given);
    std::string out, err;
    REQUIRE(lwload_run(args + " " + given, &out, &err) == 0);
    CHECK_FALSE(on(out, err));
  }
}

bool starts_json(const std::string& out, char open) { return !out.empty() && out.front() == open; }

}  // namespace

TEST_CASE("every flag of every subcommand: --help lists it as --flag[=B]") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  for (const auto& entry : commands(f)) {  // not a structured binding: CAPTURE makes a lambda (clang 14)
    const std::string& name = entry.first;
    CAPTURE(name);
    CHECK(flags_in_help(name) == entry.second.flags);  // a new flag must be added here, and tested below
  }
}

TEST_CASE("every flag of every subcommand takes true/false/yes/no/1/0 and refuses anything else (exit 2)") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  for (const auto& entry : commands(f)) {
    const std::string& name = entry.first;
    const Command& command = entry.second;
    for (const std::string& flag : command.flags) {
      CAPTURE(name);
      CAPTURE(flag);
      for (const std::string bad : {"maybe", "on", "off", "", "TRUE", "2"}) {
        CAPTURE(bad);
        std::string err;
        CHECK(lwload_run(command.args + " " + flag + "=" + bad, nullptr, &err) == 2);
        CHECK(has(err, flag + ": '" + bad + "' is not a switch"));
        CHECK(has(err, "lwload " + name));
      }
      for (const std::string good : {"true", "false", "yes", "no", "1", "0"}) {
        CAPTURE(good);
        std::string err;
        CHECK(lwload_run(command.args + " " + flag + "=" + good + " >/dev/null", nullptr, &err) == 0);
        CHECK(err.find("lwload: error") == std::string::npos);
      }
    }
  }
}

TEST_CASE("inspect, devices, plan, synth: --json, --metadata, --stats switch on and off") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  const auto json_object = [](const std::string& out, const std::string&) { return starts_json(out, '{'); };
  check_switch("inspect " + f.model, "--json", json_object);
  check_switch("inspect --json " + f.model, "--metadata",
               [](const std::string& out, const std::string&) { return has(out, "\"metadata\""); });
  check_switch("inspect " + f.model, "--stats",
               [](const std::string&, const std::string& err) { return has(err, "opened in "); });
  check_switch("devices", "--json", [](const std::string& out, const std::string&) { return starts_json(out, '['); });
  check_switch("plan " + f.model + " --device host", "--json", json_object);
  check_switch("plan " + f.model + " --device host", "--lazy",
               [](const std::string& out, const std::string&) { return has(out, "memory verdict:      lazy: "); });
  check_switch("synth " + (f.dir / "s.safetensors").string() + " --size 64KiB --tensors 2", "--json", json_object);
}

TEST_CASE("--allow-outside-links: weights linked out of the model folder refused when off, followed when on") {
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  // ONNX with external data (tests/data/onnx/mlp_external), its weights.bin a link to ../outside.bin.
  fs::copy(lwload::test::testdata() / "onnx" / "mlp_external", dir / "model", fs::copy_options::recursive);
  fs::rename(dir / "model" / "weights.bin", dir / "outside.bin");
  fs::create_symlink(fs::path("..") / "outside.bin", dir / "model" / "weights.bin");
  const std::string model = (dir / "model" / "model.onnx").string();
  for (const std::string command : {"inspect ", "plan --device host ", "load --device host ", "profile --device host ",
                                    "bench --device host --reps 1 --no-naive "}) {
    CAPTURE(command);
    for (const std::string off :
         {"", " --allow-outside-links=false", " --allow-outside-links=0", " --allow-outside-links=no"}) {
      CAPTURE(off);
      std::string err;
      CHECK(lwload_run(command + model + off, nullptr, &err) == 3);
      CHECK(has(err, "outside the model folder"));
    }
    for (const std::string on : {" --allow-outside-links", " --allow-outside-links=true", " --allow-outside-links=1",
                                 " --allow-outside-links=yes"}) {
      CAPTURE(on);
      CHECK(lwload_run(command + model + on + " >/dev/null") == 0);
    }
  }
}

TEST_CASE("doctor: one line per kernel feature, text and JSON; what a sandbox refuses shows as the fallback in force") {
  if (!lwload::test::have_exe()) return;
  check_switch("doctor", "--json", [](const std::string& out, const std::string&) { return starts_json(out, '{'); });
  const std::vector<std::string> keys = {"population",   "page_cache", "io_uring",
                                         "guarded_copy", "page_size",  "address_space"};
  std::string text, json;
  REQUIRE(lwload_run("doctor", &text) == 0);
  REQUIRE(lwload_run("doctor --json", &json) == 0);
  CHECK(has(text, "kernel: Linux "));
  const boost::json::object report = boost::json::parse(json).as_object();
  CHECK(report.at("kernel").as_string().starts_with("Linux "));
  for (const std::string& key : keys) {
    CAPTURE(key);
    CHECK(has(text, "\n" + key + ": "));
    const boost::json::object& line = report.at(key).as_object();
    CHECK_FALSE(line.at("method").as_string().empty());
    CHECK(line.at("fallback").is_bool());
  }
  CHECK(report.at("address_space").at("method").as_string() == (sizeof(void*) == 8 ? "64-bit" : "32-bit"));
  // Under tests/support/refuse.c (suite kernel_matrix, LWLOAD_REFUSED=all): every fallback shows.
  const char* refused = std::getenv("LWLOAD_REFUSED");
  if (refused && std::string(refused) == "all") {
    CHECK(report.at("population").at("method").as_string() == "MAP_POPULATE");
    CHECK(report.at("page_cache").at("method").as_string() == "mincore");
    CHECK(report.at("io_uring").at("method").as_string() == "pread");
    CHECK(report.at("guarded_copy").at("method").as_string() == "pipe");
    for (const char* key : {"population", "page_cache", "io_uring", "guarded_copy"})
      CHECK(report.at(key).at("fallback").as_bool());
  }
}

TEST_CASE("load: --verify, --verbose, --lazy, --direct-io, --json switch on and off") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  const std::string load = "load " + f.model + " --device host";
  check_switch(load, "--verify", [](const std::string& out, const std::string&) { return has(out, "verify: ok"); });
  check_switch(load, "--verbose", [](const std::string& out, const std::string&) { return has(out, "reads "); });
  check_switch(load, "--lazy",
               [](const std::string& out, const std::string&) { return has(out, "(lazy: pages fault in"); });
  check_switch(load, "--json", [](const std::string& out, const std::string&) { return starts_json(out, '{'); });
  // O_DIRECT: used, or refused at load with the reason in the plan (a file system without it); never silent.
  check_switch(load + " --placement staged --json", "--direct-io", [](const std::string& out, const std::string&) {
    return has(out, "\"direct_io\":true") || has(out, "O_DIRECT refused at load");
  });
}

TEST_CASE("--densify: sparse TFLite tensors described, loaded and verified dense") {
  if (!lwload::test::have_exe()) return;
  const std::string model = (lwload::test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite").string();
  const auto dense = [](const std::string& out, const std::string&) { return has(out, "\"encoding\":\"sparse\""); };
  check_switch("inspect --json " + model, "--densify", dense);
  check_switch("load " + model + " --device host --verify", "--densify",
               [](const std::string& out, const std::string&) {
                 return has(out, "verify: ok, 188 tensors (992.87 KiB)");  // 360.41 KiB stored
               });
  std::string out, err;
  REQUIRE(lwload_run("inspect " + model, &out, &err) == 0);
  CHECK(has(out, "(sparse: the stored values; --densify loads it dense)"));
}

TEST_CASE("profile: --verify, --lazy switch on and off") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  const std::string profile = "profile " + f.model + " --device host --json -";
  check_switch(profile, "--verify", [](const std::string& out, const std::string&) { return has(out, "\"verify\""); });
  check_switch(profile, "--lazy", [](const std::string& out, const std::string&) { return has(out, "\"lazy\":true"); });
}

TEST_CASE("bench: --json, --no-naive, --cold, --lazy switch on and off") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  const std::string bench = "bench " + f.model + " --device host --reps 1 --buffer 64KiB";
  check_switch(bench, "--json", [](const std::string& out, const std::string&) { return starts_json(out, '{'); });
  check_switch(bench, "--no-naive",
               [](const std::string& out, const std::string&) { return !has(out, "naive read+copy"); });
  check_switch(bench, "--cold", [](const std::string& out, const std::string&) { return has(out, "cache    cold"); });
  // The plan's own choices beside every forced one, staged with O_DIRECT too.
  std::string out;
  REQUIRE(lwload_run(bench + " --no-naive", &out) == 0);
  CHECK(has(out, "host default"));
  CHECK(has(out, "host staged O_DIRECT"));
  check_switch(bench + " --placements zero-copy", "--lazy", [](const std::string& out, const std::string&) {
    return has(out, "host zero_copy") && has(out, "lazy (mapping only, not resident)");
  });
}

TEST_CASE("--help documents every exit code") {
  if (!lwload::test::have_exe()) return;
  std::string out;
  REQUIRE(lwload_run("--help", &out) == 0);
  for (const char* code : {"0 ok", "1 load or device failure", "2 bad usage", "3 bad input file", "4 I/O error",
                           "5 unsupported model feature", "6 memory contract violated (profile)"})
    CHECK_MESSAGE(has(out, code), code);
  out.clear();
  REQUIRE(lwload_run("load --help", &out) == 0);
  CHECK(has(out, "4 I/O error"));
  // The README's "Exit codes:" paragraph says the same (when the tests run from a source tree).
  const fs::path readme = lwload::test::testdata() / ".." / ".." / "README.md";
  if (fs::exists(readme)) {
    std::ifstream in(readme);
    std::string line, found;  // the paragraph that begins "Exit codes:", joined into one line
    bool inside = false;
    while (std::getline(in, line)) {
      if (line.starts_with("Exit codes:")) inside = true;
      if (inside && line.empty()) break;
      if (inside) found += line + " ";
    }
    for (const char* code : {"0 ok", "1 load or device failure", "2 bad usage", "3 bad input file", "4 I/O error",
                             "5 unsupported model feature", "6 memory contract violated"})
      CHECK_MESSAGE(has(found, code), code);
  }
}

TEST_CASE("each exit code, provoked for real") {
  if (!lwload::test::have_exe()) return;
  Fixture f;
  std::string out, err;
  SUBCASE("0 ok") { CHECK(lwload_run("load " + f.model + " --device host --verify", &out) == 0); }
  SUBCASE("1 load or device failure: the plan does not fit the staging budget") {
    CHECK(lwload_run("load " + f.model + " --device null --budget 1KiB", nullptr, &err) == 1);
    CHECK(has(err, "lwload: error"));
  }
  SUBCASE("2 bad usage: an unknown option, a switch spelled wrong, an unknown device") {
    CHECK(lwload_run("load " + f.model + " --sideways", nullptr, &err) == 2);
    CHECK(lwload_run("load " + f.model + " --verify=perhaps", nullptr, &err) == 2);
    CHECK(has(err, "--verify: 'perhaps' is not a switch"));
    CHECK(lwload_run("load " + f.model + " --device nosuch", nullptr, &err) == 2);
  }
  SUBCASE("3 bad input file: a truncated safetensors header") {
    const fs::path bad = f.dir / "bad.safetensors";
    std::ofstream(bad, std::ios::binary) << std::string("\x40\0\0\0\0\0\0\0{\"w\":", 13);
    CHECK(lwload_run("inspect " + bad.string(), nullptr, &err) == 3);
    CHECK(has(err, bad.string()));
  }
  SUBCASE("4 I/O error: the OS refuses to open the model, or to write the output") {
    // A missing file: open(2) fails (ENOENT), which is the OS's answer, not a malformed model.
    CHECK(lwload_run("inspect " + (f.dir / "missing.safetensors").string(), nullptr, &err) == 4);
    CHECK(has(err, "missing.safetensors: cannot open"));
    // /dev/full: every write fails with ENOSPC — a full disk, deterministic and real. Standard
    // output that cannot be written must not exit 0 with the output lost.
    CHECK(lwload_run("inspect --json " + f.model + " >/dev/full", nullptr, &err) == 4);
    CHECK(has(err, "cannot write standard output"));
    // A report file that cannot be written.
    CHECK(lwload_run("profile " + f.model + " --device host --svg /dev/full", &out, &err) == 4);
    CHECK(has(err, "/dev/full: cannot write the SVG timeline"));
    // synth onto a disk that fills up (RLIMIT_FSIZE, its signal ignored: writes fail with EFBIG)
    // leaves nothing behind under the model's name, nor its temporary.
    const fs::path partial = f.dir / "full.safetensors";
    CHECK(lwload::test::run_command("bash -c \"trap '' XFSZ; ulimit -f 64; exec " + std::string(exe()) + " synth " +
                                    partial.string() + " --format safetensors --size 1MiB --tensors 4 2>/dev/null\"") ==
          4);
    CHECK_FALSE(fs::exists(partial));
    CHECK_FALSE(fs::exists(partial.string() + ".partial"));
    // The same for a report: an SVG that does not fit (1 KiB allowed) leaves no file behind.
    const fs::path svg = f.dir / "timeline.svg";
    CHECK(lwload::test::run_command("bash -c \"trap '' XFSZ; ulimit -f 1; exec " + std::string(exe()) + " profile " +
                                    f.model + " --device host --svg " + svg.string() + " >/dev/null 2>&1\"") == 4);
    CHECK_FALSE(fs::exists(svg));
    CHECK_FALSE(fs::exists(svg.string() + ".partial"));
  }
  SUBCASE("5 unsupported: a well-formed GGUF version 1 file") {
    const fs::path v1 = f.dir / "v1.gguf";
    std::string bytes("GGUF\x01\0\0\0", 8);
    bytes.append(24, '\0');  // tensor and KV counts (32-bit in version 1)
    std::ofstream(v1, std::ios::binary) << bytes;
    CHECK(lwload_run("inspect " + v1.string(), nullptr, &err) == 5);
    CHECK(has(err, "GGUF version 1 is not supported"));
  }
  SUBCASE("6 memory contract violated: profiling the naive loader (file and copies held at once)") {
    TempDir dir;
    const std::string model = (dir / "n.safetensors").string();
    REQUIRE(lwload_run("synth " + model + " --size 32MiB --tensors 8", nullptr) == 0);
    CHECK(lwload_run("profile " + model + " --loader naive", &out) == 6);
    CHECK(has(out, "VIOLATED"));
    // lwload's own load of the same model holds it: 0.
    CHECK(lwload_run("profile " + model + " --device host", &out) == 0);
  }
}

TEST_CASE("tensor names and errors reach the terminal with control characters escaped") {
  TempDir dir;
  const fs::path model = dir / "esc.safetensors";
  // A name holding an OSC sequence (retitles a terminal) and a C1 CSI (U+009B).
  std::string header = "{\"a\\u001b]0;x\\u0007\\u009bb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(4, '\0');
  std::ofstream(model, std::ios::binary) << bytes;
  for (const std::string command : {"inspect ", "plan ", "load --verbose "}) {
    CAPTURE(command);
    std::string out;
    REQUIRE(lwload_run(command + model.string(), &out) == 0);
    CHECK(has(out, "a\\x1b]0;x\\x07\\xc2\\x9bb"));
    CHECK_FALSE(has(out, "\x1b"));
    CHECK_FALSE(has(out, "\x07"));
  }
  // An error naming the tensor: the truncated file.
  fs::resize_file(model, fs::file_size(model) - 2);
  std::string err;
  CHECK(lwload_run("inspect " + model.string(), nullptr, &err) == 3);
  CHECK(has(err, "a\\x1b]0;x"));
  CHECK_FALSE(has(err, "\x1b"));
}

TEST_CASE(
    "a model stored in a zip (as an APK stores an asset) loads through --range: zero-copy, verified, on every device") {
  TempDir dir;
  const fs::path model = dir / "m.safetensors", app = dir / "app.zip";
  REQUIRE(lwload_run("synth " + model.string() + " --format safetensors --size 1MiB --tensors 6 --alignment 0") == 0);
  // Python's zipfile writes the container (ZIP_STORED, as aapt stores uncompressed assets, after a
  // compressed entry so the model sits at an odd offset) and says where the model's bytes are.
  std::string where;
  REQUIRE(lwload::test::run_command(
              "/usr/bin/python3 -c \"import sys,zipfile;z=zipfile.ZipFile(sys.argv[1],'w');"
              "z.writestr('AndroidManifest.xml','<manifest/>'*97,zipfile.ZIP_DEFLATED);"
              "z.write(sys.argv[2],'assets/m.safetensors',zipfile.ZIP_STORED);z.close();"
              "z=zipfile.ZipFile(sys.argv[1]);i=z.getinfo('assets/m.safetensors');f=open(sys.argv[1],'rb');"
              "f.seek(i.header_offset+26);n,e=[int.from_bytes(f.read(2),'little') for _ in (0,1)];"
              "print(str(i.header_offset+30+n+e)+':'+str(i.file_size))\" " +
                  app.string() + " " + model.string(),
              &where) == 0);
  while (!where.empty() && where.back() == '\n') where.pop_back();
  CAPTURE(where);
  REQUIRE(std::stoull(where.substr(0, where.find(':'))) % 8 != 0);
  std::string out, err;
  REQUIRE(lwload_run("inspect " + app.string() + " --range " + where, &out, &err) == 0);
  CHECK(has(out, "6 tensors"));
  std::string listed;  // a build without a backend has no such device (the OpenCL and Vulkan suites require them)
  REQUIRE(lwload_run("devices", &listed) == 0);
  for (const std::string device : {"host", "opencl:0", "vulkan:0"}) {
    CAPTURE(device);
    if (!has(listed, device)) continue;
    CHECK(lwload_run("load " + app.string() + " --range " + where + " --device " + device + " --verify --verbose", &out,
                     &err) == 0);
    CHECK(has(out, "verify: ok, 6 tensors"));
    CHECK(has(out, "zero_copy 6"));  // at an odd offset of the zip: regions cover the zip's own pages
  }
  // The same bytes one off: not a model, and the error names the range.
  const std::string shifted =
      std::to_string(std::stoull(where.substr(0, where.find(':'))) + 1) + where.substr(where.find(':'));
  CHECK(lwload_run("inspect " + app.string() + " --range " + shifted, nullptr, &err) == 3);
  CHECK(has(err, "fd "));
}

TEST_CASE(
    "a TFJS model in 1,100 shards loads under a soft open-file limit of 256 (the tool raises it to the hard one)") {
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  constexpr int kShards = 1100;
  std::string paths;
  for (int i = 0; i < kShards; ++i) {
    const std::string name = "group1-shard" + std::to_string(i + 1) + "of" + std::to_string(kShards) + ".bin";
    paths += (i ? ",\"" : "\"") + name + "\"";
    const float value = static_cast<float>(i);
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(&value), sizeof value);
  }
  std::ofstream(dir / "model.json") << R"({"weightsManifest":[{"paths":[)" << paths
                                    << R"(],"weights":[{"name":"w","shape":[1100],"dtype":"float32"}]}]})";
  std::string hard;
  REQUIRE(lwload::test::run_command("bash -c 'ulimit -Hn'", &hard) == 0);
  if (hard.rfind("unlimited", 0) != 0 && std::stoul(hard) < 2 * kShards) {
    MESSAGE("hard open-file limit ", hard, " is below what 1,100 shards need: not checked");
    return;
  }
  std::string out;
  CHECK(lwload::test::run_command("bash -c \"ulimit -Sn 256; exec " + std::string(exe()) + " load " +
                                      (dir / "model.json").string() +
                                      " --device host --placement direct --verify\" 2>&1",
                                  &out) == 0);
  INFO(out);
  CHECK(has(out, "verify: ok, 1 tensors"));
}

namespace {

// A one-tensor GGUF file (v3) whose tensor is called `name`, its bytes as given (GGUF names are
// bytes; safetensors' JSON could not carry invalid UTF-8), and, given a `meta` text, one metadata
// entry whose key and STRING value are both that text.
std::string gguf_named(const std::string& name, const std::string& meta = {}) {
  std::string out = "GGUF";
  const auto put = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put(3, 4);                     // version
  put(1, 8);                     // tensors
  put(meta.empty() ? 0 : 1, 8);  // metadata entries
  if (!meta.empty()) {
    put(meta.size(), 8);
    out += meta;
    put(8, 4);  // STRING
    put(meta.size(), 8);
    out += meta;
  }
  put(name.size(), 8);
  out += name;
  put(1, 4);  // dimensions
  put(4, 8);  // 4 elements
  put(0, 4);  // F32
  put(0, 8);  // offset in the data
  out.resize((out.size() + 31) / 32 * 32, '\0');
  return out + std::string(16, '\1');
}

// Whether `text` is well-formed UTF-8 (RFC 3629), checked independently of the tool: Python's strict decoder.
bool valid_utf8(const std::string& text) {
  TempDir dir;
  const fs::path file = dir / "text";
  std::ofstream(file, std::ios::binary) << text;
  return lwload::test::run_command(
             std::string(lwload::test::kPython) +
             " -c \"import json,sys; json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))\" " + file.string()) ==
         0;
}

}  // namespace

TEST_CASE("file names are printed escaped like tensor names; --json stays valid UTF-8 whatever the names hold") {
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  // A folder whose name retitles the terminal (OSC) and clears the screen (CSI), and a tensor name
  // with bytes that are no UTF-8 (a stray continuation byte, an overlong '/', a surrogate, 0xff).
  const fs::path folder = dir / "evil\x1b]0;pwned\x07\x1b[2J";
  fs::create_directory(folder);
  const std::string bad_name = std::string("w\x80x\xc0\xafy\xed\xa0\x80z\xff") + "\xe2\x82\xac";
  const fs::path model = folder / "m.gguf";
  std::ofstream(model, std::ios::binary) << gguf_named(bad_name);
  const std::string quoted = "'" + model.string() + "'";

  std::string out, err;
  REQUIRE(lwload_run("inspect " + quoted, &out, &err) == 0);
  CHECK(!has(out, "\x1b"));
  CHECK(!has(out, "\x07"));
  CHECK(has(out, "evil\\x1b]0;pwned\\x07\\x1b[2J"));

  out.clear();  // run_command appends
  REQUIRE(lwload_run("inspect --json " + quoted, &out, &err) == 0);
  CHECK(valid_utf8(out));
  CHECK(has(out, "w\\ufffdx\\ufffd\\ufffdy\\ufffd\\ufffd\\ufffdz\\ufffd\xe2\x82\xac"));  // the euro sign is kept
  out.clear();
  REQUIRE(lwload_run("plan --json --device host " + quoted, &out, &err) == 0);
  CHECK(valid_utf8(out));
  out.clear();
  REQUIRE(lwload_run("load --json --device host " + quoted, &out, &err) == 0);
  CHECK(valid_utf8(out));

  // A missing file named with escapes: the error escapes them too.
  CHECK(lwload_run("inspect '" + (folder / "missing.gguf").string() + "'", &out, &err) != 0);
  CHECK(!has(err, "\x1b"));
}

TEST_CASE("--json replaces code points past U+10FFFF and overlong forms in names, keys and values, keeps the rest") {
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  // Past U+10FFFF (F4 90.., F5..), overlong 3- and 4-byte forms: each byte becomes U+FFFD (it
  // begins no well-formed sequence). U+10FFFF and U+0800, the edges just inside, stay as they are.
  const std::string bad =
      "a\xf4\x90\x80\x80"
      "b\xe0\x80\xaf"
      "c\xf0\x80\x80\xaf"
      "d\xf5\x80\x80\x80"
      "e\xf4\x8f\xbf\xbf"
      "f\xe0\xa0\x80";
  const auto replaced = [](int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out += "\\ufffd";
    return out;
  };
  const std::string expected = "a" + replaced(4) + "b" + replaced(3) + "c" + replaced(4) + "d" + replaced(4) +
                               "e\xf4\x8f\xbf\xbf"
                               "f\xe0\xa0\x80";
  const fs::path model = dir / "m.gguf";
  std::ofstream(model, std::ios::binary) << gguf_named(bad, bad);
  const std::string quoted = "'" + model.string() + "'";

  std::string out, err;
  REQUIRE_MESSAGE(lwload_run("inspect --json --metadata " + quoted, &out, &err) == 0, err);
  CHECK(valid_utf8(out));
  CHECK(has(out, "\"name\":\"" + expected + "\""));
  CHECK(has(out, "\"" + expected + "\":\"" + expected + "\""));  // the metadata key and its value
  out.clear();
  REQUIRE(lwload_run("plan --json --device host " + quoted, &out, &err) == 0);
  CHECK(valid_utf8(out));
  CHECK(has(out, expected));
}
