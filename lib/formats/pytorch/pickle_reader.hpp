// A restricted unpickler that executes nothing. It understands the opcodes of pickle protocols 2-5
// that describe data (containers, numbers, strings, memo, marks) and turns the three that would run
// code into inert nodes: GLOBAL/STACK_GLOBAL become a `global` node — and only names the caller
// allows are accepted at all, any other is refused with an error naming it —, REDUCE becomes a
// `call` node (callee + arguments, never called) and BINPERSID a `persistent` node. Opcodes that
// build arbitrary objects (INST, OBJ, NEWOBJ, NEWOBJ_EX) are refused.
//
// Hand-written because Debian has no C++ library that reads pickle safely: the one C++ reader
// (PyTorch's own torch::jit::Unpickler) needs libtorch and runs its type resolver, and Python's
// pickle executes by design. A data-only pickle is a small stack machine.
#pragma once

#include "formats/pytorch/layer.hpp"

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lwload::formats::pickle {

struct Node;
// Nodes are owned by their Tree's arena: a pickle may build cycles (a list appended to itself
// through the memo), which shared ownership would leak.
using Value = Node*;

struct Node {
  enum class Kind {
    none,
    boolean,
    integer,
    floating,
    string,
    bytes,
    list,
    tuple,
    dict,
    global,
    call,
    persistent,
    object
  };
  Kind kind = Kind::none;
  std::int64_t integer = 0;  // boolean (0/1) and integer
  double floating = 0;
  std::string text;                              // string, bytes; global: "module.name"
  std::vector<Value> items;                      // list, tuple; call: [callee, args tuple]; persistent: [pid];
                                                 // object: [state] once BUILD gave it one (text: its class)
  std::vector<std::pair<Value, Value>> entries;  // dict, in insertion order
};

std::string_view kind_name(Node::Kind kind) noexcept;

struct Options {
  // True for a global ("module.name") the caller accepts; any other is refused by name.
  std::function<bool(std::string_view)> allow_global;
  // Globals whose call with no arguments makes an empty dict that later SETITEMS fill
  // (collections.OrderedDict): the one construction whose result later opcodes mutate.
  std::function<bool(std::string_view)> is_dict_type;
  // Classes NEWOBJ may instantiate as inert records (TorchScript's `__torch__.*` modules): the
  // object is a node of kind object, its BUILD state kept; no constructor or __setstate__ runs.
  std::function<bool(std::string_view)> is_record_type;
};

struct Tree {
  std::deque<Node> arena;  // a deque: nodes never move
  Value root = nullptr;
  // Every BINPERSID's node, in the order the stream made them (a reader that resolves persistent
  // ids as it meets them, as Python's unpickler does, sees them in this order), including those of
  // values later dropped or replaced.
  std::vector<Value> persistent;
  std::size_t end = 0;  // the offset just past STOP
};

// The memory an unpickling may use: kMemoryPerByte bytes per pickle byte plus kMemoryFloor. Each
// opcode builds at most one node (~100 bytes) plus a stack slot, so a pickle of one-byte opcodes
// (16 MiB of EMPTY_LIST) would otherwise cost ~100x its size; real state dicts use less than 8x.
inline constexpr std::uint64_t kMemoryPerByte = 8;
inline constexpr std::uint64_t kMemoryFloor = std::uint64_t{64} << 20;

// BUILD keeps the state of an object (NEWOBJ) and drops that of a dict made by an is_dict_type
// global (OrderedDict's `_metadata`); on anything else — a rebuilt tensor, whose state
// Tensor.__setstate__ would apply by replacing its storage, a plain dict or a list, which Python
// cannot build — it is refused, naming the target.
// Interprets `data` (the bytes of `what` inside `file`, for messages) up to STOP and returns the
// top of the stack. Throws Error(bad_input) naming the file, `what`, the opcode's offset and the
// problem — including "refuses global 'os.system'" and a pickle past its memory budget. Immutable
// values (None, booleans, the empty tuple, ints 0-255) are one shared node each; a dict's keys
// are hashed, so SETITEMS costs constant time per item.
Tree unpickle(std::span<const std::byte> data, const std::filesystem::path& file, std::string_view what,
              const Options& options);

// The same for a pickle followed by other bytes (legacy torch.save: several pickles in a row, then
// raw storage bytes): `data` may end before the pickle does, and then the answer is nullopt (read
// more and call again) instead of an error. Tree::end says where the next thing starts.
std::optional<Tree> unpickle_prefix(std::span<const std::byte> data, const std::filesystem::path& file,
                                    std::string_view what, const Options& options);

}  // namespace lwload::formats::pickle
