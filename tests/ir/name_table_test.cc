// aotgrad: tests of NameTable against std::unordered_map under random inserts and erasures.
#include "aotgrad/ir/name_table.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <unordered_map>

namespace aotgrad {
namespace {

TEST(NameTable, AgreesWithUnorderedMapUnderInsertsAndErasures) {
  std::mt19937 rng(11);
  // Names live in a deque (stable addresses); values are fake node addresses.
  std::deque<std::string> storage;
  for (int i = 0; i < 3000; ++i) storage.push_back("add_" + std::to_string(i));
  NameTable table;
  std::unordered_map<std::string, Node*> ref;
  for (int step = 0; step < 60000; ++step) {
    const std::string& name = storage[rng() % storage.size()];
    Node* node = reinterpret_cast<Node*>(static_cast<uintptr_t>(16 * (step + 1)));
    if (rng() % 3 == 0) {
      table.erase(name);
      ref.erase(name);
    } else {
      auto [value, inserted] = table.insert(name, node);
      auto [it, ref_inserted] = ref.emplace(name, node);
      ASSERT_EQ(inserted, ref_inserted) << name;
      ASSERT_EQ(*value, it->second) << name;
    }
    ASSERT_EQ(table.size(), ref.size());
    if (step % 5000 == 0)
      for (const std::string& s : storage) {
        auto it = ref.find(s);
        Node* const* found = table.find(s);
        ASSERT_EQ(found != nullptr, it != ref.end()) << s;
        if (found) {
          ASSERT_EQ(*found, it->second) << s;
        }
      }
  }
  // Lookups take any view of the text, not only the stored one.
  const std::string probe = "add_17";
  EXPECT_EQ(table.contains(std::string_view(probe)), ref.count(probe) > 0);
}

TEST(NameTable, EmptyTable) {
  NameTable t;
  EXPECT_EQ(t.find("x"), nullptr);
  t.erase("x");
  EXPECT_EQ(t.size(), 0u);
  t.reserve(1000);
  EXPECT_FALSE(t.contains("x"));
  std::string x = "x";
  EXPECT_TRUE(t.insert(x, nullptr).second);
  EXPECT_TRUE(t.contains("x"));
  EXPECT_EQ(*t.find("x"), nullptr);  // a name claimed without a node
}

}  // namespace
}  // namespace aotgrad
