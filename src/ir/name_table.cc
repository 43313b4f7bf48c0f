// aotgrad: the open-addressing table of a graph's names.
#include "aotgrad/ir/name_table.h"

#include <functional>

#include "aotgrad/ir/error.h"

namespace aotgrad {

namespace {
uint64_t hash_of(std::string_view s) { return std::hash<std::string_view>{}(s); }
}  // namespace

size_t NameTable::probe(std::string_view name, uint64_t hash) const {
  size_t mask = slots_.size() - 1;
  size_t i = home(hash);
  while (slots_[i].data != nullptr) {
    const Slot& s = slots_[i];
    if (s.hash == hash && std::string_view(s.data, s.length) == name) return i;
    i = (i + 1) & mask;
  }
  return i;
}

Node** NameTable::find(std::string_view name) {
  if (size_ == 0) return nullptr;
  Slot& s = slots_[probe(name, hash_of(name))];
  return s.data ? &s.node : nullptr;
}

std::pair<Node**, bool> NameTable::insert(std::string_view name, Node* node) {
  AOTGRAD_CHECK(name.size() < (1u << 31), "name of ", name.size(), " characters is too long");
  if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
  uint64_t hash = hash_of(name);
  Slot& s = slots_[probe(name, hash)];
  if (s.data) return {&s.node, false};
  s.hash = hash;
  s.data = name.data();
  s.length = static_cast<uint32_t>(name.size());
  s.node = node;
  ++size_;
  return {&s.node, true};
}

void NameTable::erase(std::string_view name) {
  if (size_ == 0) return;
  size_t mask = slots_.size() - 1;
  size_t hole = probe(name, hash_of(name));
  if (!slots_[hole].data) return;
  slots_[hole] = Slot{};
  --size_;
  // Backward-shift deletion: move later entries of the probe run into the hole when their home
  // is not between the hole and them (cyclically), so no probe run is broken.
  for (size_t j = (hole + 1) & mask; slots_[j].data; j = (j + 1) & mask) {
    size_t k = home(slots_[j].hash);
    bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    slots_[j] = Slot{};
    hole = j;
  }
}

void NameTable::reserve(size_t n) {
  size_t want = 16;
  while (want < 2 * n) want *= 2;  // load factor at most 1/2
  if (want > slots_.size()) rehash(want);
}

void NameTable::rehash(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  size_t mask = capacity - 1;
  for (const Slot& s : old) {
    if (!s.data) continue;
    size_t i = home(s.hash);
    while (slots_[i].data) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace aotgrad
