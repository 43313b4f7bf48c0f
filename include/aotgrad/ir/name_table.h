// aotgrad: NameTable, the table of a graph's names (Graph's name -> node lookup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace aotgrad {

class Node;

/// Names to nodes with open addressing: each slot holds the name's hash, a view of the name and
/// the node. The text is not copied: a view points into the name's owner (a node's own name, or
/// the string Graph keeps for a name claimed without a node), which must outlive its entry.
/// Adding or erasing a name costs no allocation (besides growing the slot array).
class NameTable {
 public:
  /// The node of `name` (nullptr for a name claimed without one), or nullptr when `name` is not
  /// in the table: a pointer to the entry's node, which insert/erase invalidate.
  Node** find(std::string_view name);
  Node* const* find(std::string_view name) const {
    return const_cast<NameTable*>(this)->find(name);
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  /// Adds `name` -> `node` unless `name` is present; returns its entry's node and whether it was
  /// added.
  std::pair<Node**, bool> insert(std::string_view name, Node* node);
  /// Removes `name` if present.
  void erase(std::string_view name);
  /// Room for `n` names without rehashing.
  void reserve(size_t n);
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;  // nullptr: empty
    uint32_t length = 0;
    Node* node = nullptr;
  };
  /// The slot holding `name`, or the empty slot where it would go.
  size_t probe(std::string_view name, uint64_t hash) const;
  size_t home(uint64_t hash) const { return static_cast<size_t>(hash) & (slots_.size() - 1); }
  void rehash(size_t capacity);

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace aotgrad
