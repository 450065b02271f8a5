// The restricted unpickler (see pickle_reader.hpp). Opcode values and argument layouts follow
// CPython's Lib/pickletools.py. Every argument is bounds-checked against the pickle's bytes before
// it is read, so a truncated or lying pickle fails with its offset.
#include "formats/pytorch/pickle_reader.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "formats/header_reader.hpp"
#include "lwload/error.hpp"

namespace lwload::formats::pickle {

std::string_view kind_name(Node::Kind kind) noexcept {
  switch (kind) {
    case Node::Kind::none: return "None";
    case Node::Kind::boolean: return "bool";
    case Node::Kind::integer: return "int";
    case Node::Kind::floating: return "float";
    case Node::Kind::string: return "str";
    case Node::Kind::bytes: return "bytes";
    case Node::Kind::list: return "list";
    case Node::Kind::tuple: return "tuple";
    case Node::Kind::dict: return "dict";
    case Node::Kind::global: return "global";
    case Node::Kind::call: return "call";
    case Node::Kind::persistent: return "persistent id";
    case Node::Kind::object: return "object";
  }
  return "?";
}

namespace {

struct NeedMore {};  // unpickle_prefix: the data ended before the pickle did

class Machine {
 public:
  Machine(std::span<const std::byte> data, const std::filesystem::path& file, std::string_view what,
          const Options& options, bool partial = false)
      : data_(data),
        file_(file),
        what_(what),
        options_(options),
        budget_(kMemoryFloor + kMemoryPerByte * data.size()),
        partial_(partial) {}

  Tree run();

 private:
  template <typename... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail(ErrorCode::bad_input, file_.string(), ": ", what_, " at offset ", op_offset_, ": ", parts...);
  }
  const std::byte* take(std::uint64_t n) {
    if (n > data_.size() - pos_) {
      if (partial_) throw NeedMore{};
      bad("opcode argument of ", n, " bytes runs past the end of the pickle");
    }
    const std::byte* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T arg() {
    return load_le<T>(take(sizeof(T)));
  }
  std::string text(std::uint64_t n) {
    const std::byte* p = take(n);
    charge(n);
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  std::string line() {
    const std::size_t start = pos_;
    while (pos_ < data_.size() && data_[pos_] != std::byte{'\n'}) ++pos_;
    if (pos_ == data_.size()) {
      if (partial_) throw NeedMore{};
      bad("GLOBAL argument has no terminating newline");
    }
    std::string out(reinterpret_cast<const char*>(data_.data() + start), pos_ - start);
    ++pos_;
    return out;
  }

  Value pop() {
    if (stack_.size() <= floor()) bad("pops from an empty stack");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  // The top `n` values, in stack order.
  std::vector<Value> pop_n(std::size_t n) {
    std::vector<Value> items(n);
    for (std::size_t i = n; i-- > 0;) items[i] = pop();
    return items;
  }
  Value& top() {
    if (stack_.size() <= floor()) bad("needs a value on an empty stack");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) bad("needs a MARK that was never pushed");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(mark)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }
  Value tuple(std::vector<Value> items) {
    if (items.empty()) return shared(Node::Kind::tuple);
    Value t = make(Node::Kind::tuple);
    charge(items.size() * sizeof(Value));
    t->items = std::move(items);
    return t;
  }
  Value global(std::string module, std::string name);
  Value reduce(Value callee, Value args);
  void set_items(Value& target, std::vector<Value>& items);
  void append(Value& target, std::vector<Value>& items);
  // Picklers number memo entries 0, 1, 2, ...: those go in a vector, any other index in a map.
  void put(std::uint64_t index) {
    charge(sizeof(Value));
    if (index < memo_.size()) memo_[index] = top();
    else if (index == memo_.size()) memo_.push_back(top());
    else sparse_memo_[index] = top(), charge(64);
  }
  Value get(std::uint64_t index) {
    if (index < memo_.size() && memo_[index]) return memo_[index];
    const auto it = sparse_memo_.find(index);
    if (it == sparse_memo_.end()) bad("memo entry ", index, " was never stored");
    return it->second;
  }
  std::uint64_t memo_count() const { return memo_.size() + sparse_memo_.size(); }
  void push(Value v) {
    charge(sizeof(Value));
    stack_.push_back(v);
  }
  // Counts what the machine keeps (nodes, text, container slots, stack and memo) against its budget.
  void charge(std::uint64_t bytes) {
    used_ += bytes;
    if (used_ > budget_)
      bad("unpickling needs more than ", budget_, " bytes (", kMemoryPerByte, " per pickle byte + ", kMemoryFloor >> 20,
          " MiB): a pickle of ", data_.size(), " bytes does not describe that much");
  }
  // One shared node per immutable value: nothing mutates None, a bool, an int or an empty tuple.
  Value shared(Node::Kind kind, std::int64_t integer = 0) {
    Value& slot = kind == Node::Kind::none      ? none_
                  : kind == Node::Kind::tuple   ? empty_tuple_
                  : kind == Node::Kind::boolean ? booleans_[integer != 0]
                                                : small_ints_[static_cast<std::size_t>(integer)];
    if (!slot) {
      slot = make(kind);
      slot->integer = integer;
    }
    return slot;
  }

  std::span<const std::byte> data_;
  const std::filesystem::path& file_;
  std::string_view what_;
  const Options& options_;
  std::size_t pos_ = 0;
  std::size_t op_offset_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value> memo_;
  std::unordered_map<std::uint64_t, Value> sparse_memo_;
  // Per dict, where each key (of a hashable kind) sits in its entries.
  std::unordered_map<const Node*, std::unordered_map<std::string, std::size_t>> dict_keys_;
  std::deque<Node> arena_;
  Value none_ = nullptr, empty_tuple_ = nullptr;
  std::array<Value, 2> booleans_{};
  std::array<Value, 256> small_ints_{};
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
  bool partial_ = false;
  std::vector<Value> persistent_;

  Value make(Node::Kind kind) {
    charge(sizeof(Node));
    arena_.emplace_back().kind = kind;
    return &arena_.back();
  }
};

Value Machine::global(std::string module, std::string name) {
  std::string full = module + "." + name;
  if (!options_.allow_global || !options_.allow_global(full))
    bad("refuses global '", full,
        "': lwload's unpickler executes nothing and accepts only the globals torch.save writes for a state dict");
  Value g = make(Node::Kind::global);
  g->text = std::move(full);
  return g;
}

Value Machine::reduce(Value callee, Value args) {
  if (callee->kind != Node::Kind::global) bad("REDUCE calls a ", kind_name(callee->kind), ", not a global");
  if (args->kind != Node::Kind::tuple) bad("REDUCE arguments are a ", kind_name(args->kind), ", not a tuple");
  if (options_.is_dict_type && options_.is_dict_type(callee->text)) {
    if (!args->items.empty()) bad(callee->text, "() with arguments is not supported");
    Value dict = make(Node::Kind::dict);
    dict->text = callee->text;  // BUILD may give it attributes (OrderedDict's _metadata)
    return dict;
  }
  Value call = make(Node::Kind::call);
  call->items = {std::move(callee), std::move(args)};
  return call;
}

void Machine::set_items(Value& target, std::vector<Value>& items) {
  if (target->kind != Node::Kind::dict) bad("SETITEM(S) on a ", kind_name(target->kind), ", not a dict");
  if (items.size() % 2 != 0) bad("SETITEMS with an odd number of values");
  auto& keys = dict_keys_[target];
  for (std::size_t i = 0; i < items.size(); i += 2) {
    const Node& key = *items[i];
    charge(2 * sizeof(Value));
    // A repeated key replaces the value, as in Python; keys that are not strings or numbers
    // (tuples, None) are kept as they come: state dicts never repeat them.
    if (key.kind == Node::Kind::string || key.kind == Node::Kind::bytes || key.kind == Node::Kind::integer ||
        key.kind == Node::Kind::boolean) {
      std::string id(1, static_cast<char>(key.kind));
      id.append(reinterpret_cast<const char*>(&key.integer), sizeof key.integer);
      id += key.text;
      charge(id.size() + 64);
      const auto [at, added] = keys.emplace(std::move(id), target->entries.size());
      if (!added) {
        target->entries[at->second].second = items[i + 1];
        continue;
      }
    }
    target->entries.emplace_back(items[i], items[i + 1]);
  }
}

void Machine::append(Value& target, std::vector<Value>& items) {
  if (target->kind != Node::Kind::list) bad("APPEND(S) on a ", kind_name(target->kind), ", not a list");
  charge(items.size() * sizeof(Value));
  for (auto& item : items) target->items.push_back(std::move(item));
}

Tree Machine::run() {
  while (pos_ < data_.size()) {
    op_offset_ = pos_;
    const auto op = static_cast<unsigned char>(data_[pos_++]);
    switch (op) {
      case 0x80: {  // PROTO
        const auto proto = arg<std::uint8_t>();
        if (proto < 2 || proto > 5) bad("pickle protocol ", int{proto}, " is not one torch.save writes (2-5)");
        break;
      }
      case 0x95: (void)arg<std::uint64_t>(); break;  // FRAME: a hint for buffered readers
      case '.': {                                    // STOP
        if (stack_.size() != 1 || !marks_.empty()) bad("STOP with ", stack_.size(), " values on the stack");
        return Tree{std::move(arena_), stack_.back(), std::move(persistent_), pos_};
      }
      case '(': charge(sizeof(std::size_t)), marks_.push_back(stack_.size()); break;  // MARK
      case '}': push(make(Node::Kind::dict)); break;
      case ']': push(make(Node::Kind::list)); break;
      case ')': push(shared(Node::Kind::tuple)); break;
      case 'N': push(shared(Node::Kind::none)); break;
      case 0x88:
      case 0x89: push(shared(Node::Kind::boolean, op == 0x88)); break;  // NEWTRUE, NEWFALSE
      case 'J':
      case 'K':
      case 'M': {  // BININT, BININT1, BININT2
        const std::int64_t value = op == 'J'   ? std::int64_t{arg<std::int32_t>()}
                                   : op == 'K' ? std::int64_t{arg<std::uint8_t>()}
                                               : std::int64_t{arg<std::uint16_t>()};
        if (value >= 0 && value < 256) {
          push(shared(Node::Kind::integer, value));
          break;
        }
        Value v = make(Node::Kind::integer);
        v->integer = value;
        push(v);
        break;
      }
      case 0x8a: {  // LONG1: n-byte little-endian two's complement
        const auto n = arg<std::uint8_t>();
        if (n > 8) bad("LONG1 of ", int{n}, " bytes does not fit 64 bits");
        const std::byte* p = take(n);
        std::uint64_t u = 0;
        for (unsigned i = 0; i < n; ++i) u |= std::uint64_t{std::to_integer<std::uint8_t>(p[i])} << (8 * i);
        if (n > 0 && n < 8 && (std::to_integer<std::uint8_t>(p[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);
        Value v = make(Node::Kind::integer);
        v->integer = static_cast<std::int64_t>(u);
        push(std::move(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        auto bits = arg<std::uint64_t>();
        bits = __builtin_bswap64(bits);
        Value v = make(Node::Kind::floating);
        v->floating = std::bit_cast<double>(bits);
        push(std::move(v));
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d:  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      case 'T':
      case 'U':
      case 'B':
      case 'C':
      case 0x8e: {  // BINSTRING, SHORT_BINSTRING, BINBYTES(8), SHORT_BINBYTES
        std::uint64_t n = 0;
        if (op == 0x8c || op == 'U' || op == 'C') n = arg<std::uint8_t>();
        else if (op == 0x8d || op == 0x8e) n = arg<std::uint64_t>();
        else n = arg<std::uint32_t>();
        const bool is_bytes = op == 'B' || op == 'C' || op == 0x8e;
        Value v = make(is_bytes ? Node::Kind::bytes : Node::Kind::string);
        v->text = text(n);
        push(std::move(v));
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        std::string module = line();
        std::string name = line();
        push(global(std::move(module), std::move(name)));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Value name = pop();
        Value module = pop();
        if (name->kind != Node::Kind::string || module->kind != Node::Kind::string)
          bad("STACK_GLOBAL needs two strings");
        push(global(module->text, name->text));
        break;
      }
      case 'q': put(arg<std::uint8_t>()); break;         // BINPUT
      case 'r': put(arg<std::uint32_t>()); break;        // LONG_BINPUT
      case 0x94: put(memo_count()); break;               // MEMOIZE
      case 'h': push(get(arg<std::uint8_t>())); break;   // BINGET
      case 'j': push(get(arg<std::uint32_t>())); break;  // LONG_BINGET
      case 't': push(tuple(pop_mark())); break;          // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: push(tuple(pop_n(op - 0x84))); break;  // TUPLE1..3
      case 'l': {                                       // LIST (from mark)
        Value l = make(Node::Kind::list);
        l->items = pop_mark();
        push(std::move(l));
        break;
      }
      case 'd': {  // DICT (from mark)
        std::vector<Value> items = pop_mark();
        push(make(Node::Kind::dict));
        set_items(stack_.back(), items);
        break;
      }
      case 's':
      case 'u': {  // SETITEM: one key and value; SETITEMS: the pairs from the mark
        std::vector<Value> items = op == 's' ? pop_n(2) : pop_mark();
        set_items(top(), items);
        break;
      }
      case 'a':
      case 'e': {  // APPEND: one item; APPENDS: the items from the mark
        std::vector<Value> items = op == 'a' ? pop_n(1) : pop_mark();
        append(top(), items);
        break;
      }
      case 'Q': {  // BINPERSID: torch's storage references
        Value p = make(Node::Kind::persistent);
        p->items = {pop()};
        charge(sizeof(Value));
        persistent_.push_back(p);
        push(std::move(p));
        break;
      }
      case 'R': {  // REDUCE: recorded, never called
        Value args = pop();
        Value callee = pop();
        push(reduce(std::move(callee), std::move(args)));
        break;
      }
      case 'b': {  // BUILD: a record's state is kept, an OrderedDict's attributes (_metadata) dropped
        Value state = pop();
        Value target = top();
        if (target->kind == Node::Kind::object) {
          if (!target->items.empty()) bad("BUILD gives object '", target->text, "' a second state");
          target->items.push_back(std::move(state));
        } else if (target->kind == Node::Kind::call) {
          // torch.load would hand the state to Tensor.__setstate__, which replaces the storage,
          // offset, size and stride _rebuild_tensor_v2 gave: two readings of one tensor.
          bad("BUILD sets state on the result of ", target->items[0]->text,
              " (torch.load would apply it with __setstate__, replacing what the call built); lwload refuses "
              "a tensor described twice");
        } else if (target->kind != Node::Kind::dict || target->text.empty()) {
          bad("BUILD on a ", kind_name(target->kind),
              ", which has no attributes to set (Python's unpickler refuses it too)");
        }
        break;
      }
      case '0': (void)pop(); break;       // POP
      case '1': (void)pop_mark(); break;  // POP_MARK
      case '2': push(top()); break;       // DUP
      case 0x81: {                        // NEWOBJ: only an inert record of an accepted class (is_record_type)
        Value args = pop();
        Value cls = pop();
        if (cls->kind != Node::Kind::global || !options_.is_record_type || !options_.is_record_type(cls->text))
          bad("opcode NEWOBJ builds an object of ",
              cls->kind == Node::Kind::global ? "'" + cls->text + "'" : "a non-class",
              "; lwload's unpickler refuses it");
        if (args->kind != Node::Kind::tuple || !args->items.empty())
          bad("NEWOBJ of '", cls->text, "' passes constructor arguments; lwload's unpickler refuses it");
        Value object = make(Node::Kind::object);
        object->text = cls->text;
        push(std::move(object));
        break;
      }
      case 'i':
      case 'o':
      case 0x92:
        bad("opcode ",
            op == 'i'   ? "INST"
            : op == 'o' ? "OBJ"
                        : "NEWOBJ_EX",
            " builds an arbitrary object; lwload's unpickler refuses it");
      default: bad("opcode 0x", std::hex, int{op}, std::dec, " is not one a torch state dict uses");
    }
  }
  op_offset_ = pos_;
  if (partial_) throw NeedMore{};
  bad("the pickle ends without STOP (truncated?)");
}

}  // namespace

Tree unpickle(std::span<const std::byte> data, const std::filesystem::path& file, std::string_view what,
              const Options& options) {
  return Machine(data, file, what, options).run();
}

std::optional<Tree> unpickle_prefix(std::span<const std::byte> data, const std::filesystem::path& file,
                                    std::string_view what, const Options& options) {
  try {
    return Machine(data, file, what, options, true).run();
  } catch (const NeedMore&) {
    return std::nullopt;
  }
}

}  // namespace lwload::formats::pickle
