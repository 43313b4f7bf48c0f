// aotgrad: NodeMap, a flat hash map keyed by node for the passes' per-node loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"

namespace aotgrad {

class Node;

/// A map from nodes to values with open addressing on the node's address: one array of slots, no
/// allocation per entry, so a pass that maps every node of a 100k-node graph (a copy's old-to-new
/// nodes, positions) does not pay a heap node and a rehash chain per entry as with
/// std::unordered_map. Entries are never removed; insertion invalidates pointers to values.
template <typename V>
class NodeMap {
 public:
  NodeMap() = default;
  explicit NodeMap(size_t expected) { reserve(expected); }

  /// Room for `n` entries without rehashing.
  void reserve(size_t n) {
    size_t want = 16;
    while (want < 2 * n) want *= 2;  // load factor at most 1/2
    if (want > slots_.size()) rehash(want);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Inserts `key -> value` unless `key` is present; returns the value held and whether it was
  /// inserted.
  std::pair<V*, bool> emplace(const Node* key, V value) {
    AOTGRAD_CHECK(key != nullptr, "NodeMap: null node");
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    size_t i = probe(key);
    if (slots_[i].key == key) return {&slots_[i].value, false};
    slots_[i].key = key;
    slots_[i].value = std::move(value);
    ++size_;
    return {&slots_[i].value, true};
  }
  /// The value of `key`, default-constructed and inserted if absent.
  V& operator[](const Node* key) { return *emplace(key, V{}).first; }
  /// The value of `key`, or nullptr.
  V* find(const Node* key) {
    if (slots_.empty()) return nullptr;
    Slot& s = slots_[probe(key)];
    return s.key == key && key ? &s.value : nullptr;
  }
  const V* find(const Node* key) const { return const_cast<NodeMap*>(this)->find(key); }
  bool contains(const Node* key) const { return find(key) != nullptr; }
  /// The value of `key`, which must be present (`what` names the map in the error).
  const V& at(const Node* key, const char* what = "NodeMap") const {
    const V* v = find(key);
    AOTGRAD_CHECK(v != nullptr, what, ": node is not in the map");
    return *v;
  }

 private:
  struct Slot {
    const Node* key = nullptr;
    V value{};
  };
  size_t probe(const Node* key) const {
    // Fibonacci hashing of the address (nodes are at least 16-byte aligned), linear probing.
    uint64_t h = (reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull;
    size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(h >> 32) & mask;
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    for (Slot& s : old)
      if (s.key) {
        Slot& d = slots_[probe(s.key)];
        d.key = s.key;
        d.value = std::move(s.value);
      }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace aotgrad
