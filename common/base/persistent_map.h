// PersistentMap: an immutable hash map (a hash array mapped trie, HAMT) whose updates
// return a new map that shares every untouched node with the old one.
//
// Why: the DNS record tree is published to reader threads as immutable snapshots. With
// flat maps, changing one service in a namespace of 100k services would copy 100k entries;
// here Set and Erase copy only the nodes on one root-to-leaf path (at most 13 nodes of at
// most 32 entries; about log32(n) in practice), so an update costs in proportion to what
// changed, not to the cluster. Readers need no locks: nodes never change after they are
// built, and shared_ptr reference counts keep old versions alive while a reader holds them.
//
// Layout: each node covers 5 bits of the 64-bit hash and holds a 32-bit bitmap plus a
// dense vector of slots (a leaf or a child node), so an empty slot costs nothing. Below 64
// bits of hash, keys that collide completely live together in one collision node.
// FromEntries builds a whole map in O(n log n) without intermediate garbage (used for full
// loads and re-lists).
//
// Thread-safety: a PersistentMap value may be read from any number of threads at once;
// Set/Erase never modify the map they are called on. Assigning to one PersistentMap object
// from two threads is a race, as for any value type.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kdns {

// Hashes std::string and std::string_view alike, for lookups without building a string.
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class PersistentMap {
 public:
  PersistentMap() = default;

  // Builds a map from (key, value) pairs; for duplicate keys the last one wins.
  static PersistentMap FromEntries(std::vector<std::pair<K, V>> entries) {
    std::vector<Leaf> leaves;
    leaves.reserve(entries.size());
    for (auto& [key, value] : entries) {
      uint64_t hash = Hash{}(key);
      leaves.push_back(Leaf{hash, std::move(key), std::move(value)});
    }
    // Stable sort keeps input order among equal hashes, so "last one wins" below.
    std::stable_sort(leaves.begin(), leaves.end(),
                     [](const Leaf& a, const Leaf& b) { return a.hash < b.hash; });
    // Drop duplicate keys, keeping the last occurrence of each.
    std::vector<Leaf> unique;
    unique.reserve(leaves.size());
    for (size_t i = 0; i < leaves.size();) {
      size_t j = i;
      while (j < leaves.size() && leaves[j].hash == leaves[i].hash) ++j;
      for (size_t a = i; a < j; ++a) {
        bool later_duplicate = false;
        for (size_t b = a + 1; b < j; ++b) {
          if (Eq{}(leaves[a].key, leaves[b].key)) later_duplicate = true;
        }
        if (!later_duplicate) unique.push_back(std::move(leaves[a]));
      }
      i = j;
    }
    PersistentMap map;
    map.size_ = unique.size();
    if (!unique.empty()) map.root_ = Build(unique, 0, unique.size(), 0);
    return map;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // True when `other` is this very map (a copy of it, not an equal map built apart): what
  // a writer compares to learn, without a walk, that nothing was set or erased since.
  bool SharesRootWith(const PersistentMap& other) const { return root_ == other.root_; }

  // The value for `key`, or nullptr. The pointer is valid while this map (or any map
  // sharing the node) is alive. Q may differ from K when Hash and Eq accept it (e.g. a
  // string_view for string keys with TransparentStringHash and std::equal_to<>), so a
  // lookup need not build a key.
  template <class Q = K>
  const V* Find(const Q& key) const {
    const Node* node = root_.get();
    uint64_t hash = Hash{}(key);
    for (unsigned shift = 0; node != nullptr; shift += kBits) {
      if (node->collision) {
        for (const Slot& slot : node->slots) {
          const Leaf& leaf = std::get<Leaf>(slot);
          if (Eq{}(leaf.key, key)) return &leaf.value;
        }
        return nullptr;
      }
      uint32_t bit = Bit(hash, shift);
      if ((node->bitmap & bit) == 0) return nullptr;
      const Slot& slot = node->slots[Index(node->bitmap, bit)];
      if (const Leaf* leaf = std::get_if<Leaf>(&slot)) {
        return leaf->hash == hash && Eq{}(leaf->key, key) ? &leaf->value : nullptr;
      }
      node = std::get<NodePtr>(slot).get();
    }
    return nullptr;
  }

  // A map with `key` set to `value` (inserted or replaced).
  [[nodiscard]] PersistentMap Set(K key, V value) const {
    uint64_t hash = Hash{}(key);
    bool added = false;
    PersistentMap out;
    out.root_ = Insert(root_.get(), Leaf{hash, std::move(key), std::move(value)}, 0, &added);
    out.size_ = size_ + (added ? 1 : 0);
    return out;
  }

  // A map without `key` (the same map if it was absent).
  [[nodiscard]] PersistentMap Erase(const K& key) const {
    if (Find(key) == nullptr) return *this;
    PersistentMap out;
    out.root_ = Remove(root_.get(), key, Hash{}(key), 0);
    out.size_ = size_ - 1;
    return out;
  }

  // Calls f(key, value) for every entry, in hash order.
  template <class F>
  void ForEach(F&& f) const {
    if (root_) Visit(*root_, f);
  }

 private:
  static constexpr unsigned kBits = 5;
  static constexpr unsigned kHashBits = 64;

  struct Node;
  using NodePtr = std::shared_ptr<const Node>;
  struct Leaf {
    uint64_t hash;
    K key;
    V value;
  };
  using Slot = std::variant<Leaf, NodePtr>;
  struct Node {
    uint32_t bitmap = 0;
    bool collision = false;  // all slots are leaves with the same full hash
    std::vector<Slot> slots;
  };

  static uint32_t Bit(uint64_t hash, unsigned shift) {
    return uint32_t{1} << ((hash >> shift) & ((1u << kBits) - 1));
  }
  static size_t Index(uint32_t bitmap, uint32_t bit) {
    return static_cast<size_t>(std::popcount(bitmap & (bit - 1)));
  }

  // Builds the node for leaves[begin, end), all sharing the hash bits below `shift`.
  static NodePtr Build(std::vector<Leaf>& leaves, size_t begin, size_t end, unsigned shift) {
    auto node = std::make_shared<Node>();
    if (shift >= kHashBits) {
      node->collision = true;
      for (size_t i = begin; i < end; ++i) node->slots.emplace_back(std::move(leaves[i]));
      return node;
    }
    // Leaves are sorted by full hash, not by this chunk: group them by chunk value.
    std::stable_sort(leaves.begin() + begin, leaves.begin() + end,
                     [shift](const Leaf& a, const Leaf& b) {
                       return ((a.hash >> shift) & 31) < ((b.hash >> shift) & 31);
                     });
    for (size_t i = begin; i < end;) {
      uint64_t chunk = (leaves[i].hash >> shift) & 31;
      size_t j = i;
      while (j < end && ((leaves[j].hash >> shift) & 31) == chunk) ++j;
      node->bitmap |= uint32_t{1} << chunk;
      if (j - i == 1) {
        node->slots.emplace_back(std::move(leaves[i]));
      } else {
        node->slots.emplace_back(Build(leaves, i, j, shift + kBits));
      }
      i = j;
    }
    return node;
  }

  // A node holding two leaves whose hashes agree below `shift`.
  static NodePtr Pair(Leaf a, Leaf b, unsigned shift) {
    auto node = std::make_shared<Node>();
    if (shift >= kHashBits) {
      node->collision = true;
      node->slots.emplace_back(std::move(a));
      node->slots.emplace_back(std::move(b));
      return node;
    }
    uint32_t bit_a = Bit(a.hash, shift);
    uint32_t bit_b = Bit(b.hash, shift);
    if (bit_a == bit_b) {
      node->bitmap = bit_a;
      node->slots.emplace_back(Pair(std::move(a), std::move(b), shift + kBits));
      return node;
    }
    node->bitmap = bit_a | bit_b;
    if (bit_a < bit_b) {
      node->slots.emplace_back(std::move(a));
      node->slots.emplace_back(std::move(b));
    } else {
      node->slots.emplace_back(std::move(b));
      node->slots.emplace_back(std::move(a));
    }
    return node;
  }

  static NodePtr Insert(const Node* node, Leaf leaf, unsigned shift, bool* added) {
    if (node == nullptr) {
      auto fresh = std::make_shared<Node>();
      fresh->bitmap = Bit(leaf.hash, shift);
      fresh->slots.emplace_back(std::move(leaf));
      *added = true;
      return fresh;
    }
    if (node->collision) {  // past the hash's last bits: no Bit() here
      auto copy = std::make_shared<Node>(*node);
      for (Slot& slot : copy->slots) {
        if (Eq{}(std::get<Leaf>(slot).key, leaf.key)) {
          slot = std::move(leaf);
          return copy;
        }
      }
      copy->slots.emplace_back(std::move(leaf));
      *added = true;
      return copy;
    }
    uint32_t bit = Bit(leaf.hash, shift);
    if ((node->bitmap & bit) == 0) {
      // A new slot: build the node at its final size. Copying and then inserting would
      // double the vector's capacity, and a map built by updates (a watch, a streamed list)
      // would keep that slack in every node it touched.
      const size_t index = Index(node->bitmap, bit);
      auto grown = std::make_shared<Node>();
      grown->bitmap = node->bitmap | bit;
      grown->slots.reserve(node->slots.size() + 1);
      grown->slots.insert(grown->slots.end(), node->slots.begin(),
                          node->slots.begin() + static_cast<std::ptrdiff_t>(index));
      grown->slots.emplace_back(std::move(leaf));
      grown->slots.insert(grown->slots.end(),
                          node->slots.begin() + static_cast<std::ptrdiff_t>(index),
                          node->slots.end());
      *added = true;
      return grown;
    }
    auto copy = std::make_shared<Node>(*node);
    Slot& slot = copy->slots[Index(node->bitmap, bit)];
    if (Leaf* existing = std::get_if<Leaf>(&slot)) {
      if (existing->hash == leaf.hash && Eq{}(existing->key, leaf.key)) {
        existing->value = std::move(leaf.value);
        return copy;
      }
      *added = true;
      slot = Pair(std::move(*existing), std::move(leaf), shift + kBits);
      return copy;
    }
    slot = Insert(std::get<NodePtr>(slot).get(), std::move(leaf), shift + kBits, added);
    return copy;
  }

  // `key` is known to be present. Returns the replacement node, or nullptr when it is empty.
  static NodePtr Remove(const Node* node, const K& key, uint64_t hash, unsigned shift) {
    auto copy = std::make_shared<Node>(*node);
    if (node->collision) {
      auto it = std::find_if(copy->slots.begin(), copy->slots.end(),
                             [&](const Slot& s) { return Eq{}(std::get<Leaf>(s).key, key); });
      copy->slots.erase(it);
      return copy->slots.empty() ? nullptr : copy;
    }
    uint32_t bit = Bit(hash, shift);
    size_t index = Index(node->bitmap, bit);
    Slot& slot = copy->slots[index];
    if (std::holds_alternative<NodePtr>(slot)) {
      NodePtr child = Remove(std::get<NodePtr>(slot).get(), key, hash, shift + kBits);
      if (child != nullptr) {
        // A child left with a single leaf collapses into that leaf.
        if (child->slots.size() == 1 && std::holds_alternative<Leaf>(child->slots[0])) {
          slot = std::get<Leaf>(child->slots[0]);
        } else {
          slot = std::move(child);
        }
        return copy;
      }
    }
    copy->bitmap &= ~bit;
    copy->slots.erase(copy->slots.begin() + static_cast<std::ptrdiff_t>(index));
    return copy->slots.empty() ? nullptr : copy;
  }

  template <class F>
  static void Visit(const Node& node, F& f) {
    for (const Slot& slot : node.slots) {
      if (const Leaf* leaf = std::get_if<Leaf>(&slot)) {
        f(leaf->key, leaf->value);
      } else {
        Visit(*std::get<NodePtr>(slot), f);
      }
    }
  }

  NodePtr root_;
  size_t size_ = 0;
};

}  // namespace kdns
