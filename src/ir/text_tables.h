// aotgrad: flat hash tables for the text form's hot paths (names while parsing, node positions
// while printing and verifying): open addressing, no allocation per entry.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace aotgrad {
class Node;
}

namespace aotgrad::text {

/// Maps string_views (which must outlive the table) to values. Linear probing, load <= 1/2;
/// 24-byte slots for small values, so that big tables stay cache-friendly.
template <typename V>
class NameMap {
 public:
  explicit NameMap(size_t expected = 16) { rehash(capacity_for(expected)); }

  /// The value of `key`, or nullptr.
  V* find(std::string_view key) {
    uint32_t h = hash(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.data) return nullptr;
      if (s.hash == h && s.size == key.size() && std::string_view(s.data, s.size) == key)
        return &s.value;
    }
  }
  bool contains(std::string_view key) { return find(key) != nullptr; }
  /// Inserts `key` (which must be absent and not be a null view).
  void insert(std::string_view key, V value) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    place(hash(key), key, std::move(value));
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    const char* data = nullptr;  // null: empty
    uint32_t size = 0;
    uint32_t hash = 0;
    V value{};
  };
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < n * 2) c *= 2;
    return c;
  }
  static uint32_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  void place(uint32_t h, std::string_view key, V value) {
    size_t i = h & mask_;
    while (slots_[i].data) i = (i + 1) & mask_;
    // An empty key still needs a non-null pointer to mark the slot used.
    slots_[i] =
        Slot{key.data() ? key.data() : "", static_cast<uint32_t>(key.size()), h, std::move(value)};
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (auto& s : old)
      if (s.data) place(s.hash, std::string_view(s.data, s.size), std::move(s.value));
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

/// Maps node pointers to positions 0..n-1 (a graph's node order).
class NodeIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  explicit NodeIndex(size_t n) {
    size_t c = 16;
    while (c < n * 2) c *= 2;
    slots_.assign(c, Slot{});
    mask_ = c - 1;
  }
  /// Records `node` at position `pos`; false if it was already recorded.
  bool insert(const Node* node, uint32_t pos) {
    if (!node) return false;
    for (size_t i = hash(node) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].node == node) return false;
      if (!slots_[i].node) {
        slots_[i] = {node, pos};
        return true;
      }
    }
  }
  /// The position of `node`, or kAbsent.
  uint32_t find(const Node* node) const {
    if (!node) return kAbsent;
    for (size_t i = hash(node) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].node == node) return slots_[i].pos;
      if (!slots_[i].node) return kAbsent;
    }
  }

 private:
  struct Slot {
    const Node* node = nullptr;
    uint32_t pos = 0;
  };
  static size_t hash(const Node* p) {
    uint64_t x = reinterpret_cast<uintptr_t>(p);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return static_cast<size_t>(x ^ (x >> 33));
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace aotgrad::text
