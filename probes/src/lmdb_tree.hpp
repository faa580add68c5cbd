// SPDX-License-Identifier: MIT
// LMDB's file format, checked before LMDB reads it. LMDB trusts data.mdb: it maps as many pages as
// the meta page says are in use, follows page numbers and node offsets without bounds checks, and
// asserts (abort) or dereferences a null cursor on a flag it does not expect. A truncated copy
// therefore dies of SIGBUS, and a flipped byte of SIGSEGV or SIGABRT. The loader checks the meta
// pages against the file size with pread (before anything maps the file) and walks each lookup's
// path itself, checking every page before it reads from it, then lets LMDB read the same path.
// The layout is liblmdb 0.9's on 64-bit machines (mdb.c: MDB_page, MDB_meta, MDB_db, MDB_node).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace loaderlens::probes {

// The meta page LMDB uses (of the two, the one with the larger transaction id).
struct LmdbMeta {
    static constexpr std::uint64_t no_root = ~std::uint64_t{0}; // P_INVALID: an empty database
    std::uint32_t page_size = 0;
    std::uint64_t last_page = 0; // mm_last_pg: pages 0..last_page are in use
    std::uint64_t root = no_root;
    std::uint64_t entries = 0;
    std::uint64_t pages_in_use() const { return last_page + 1; }
};

// Reads both meta pages of data.mdb with pread and checks what LMDB relies on: the meta flag,
// magic and version, a page size LMDB can use (the same in both), every page in use inside the
// file, and a main database of plain unique keys (no flags: no dupsort, integer or reverse
// keys). Throws DatasetError naming `dataset` (the environment directory).
LmdbMeta read_lmdb_meta(int fd, std::int64_t file_size, const std::string& dataset);

// Where a value lies in data.mdb: inside the pages in use, hence inside the file.
struct LmdbValue {
    std::uint64_t offset = 0, size = 0;
};

// The main database's B-tree, walked as LMDB walks it for mdb_get, MDB_FIRST and MDB_LAST (the
// same binary search, the same comparison), with every page checked before its nodes are read:
// header, node offsets and sizes inside the page, child and overflow page numbers among the
// pages in use, depth within LMDB's cursor stack. A page is checked once per LmdbTree. A
// damaged page throws DatasetDamage naming the dataset and the page.
class LmdbTree {
  public:
    // `page_size` bytes of page `page` (page < meta.pages_in_use(), checked by the caller).
    using PageReader = std::function<const std::byte*(std::uint64_t page)>;

    LmdbTree(const LmdbMeta& meta, PageReader read_page, std::string dataset);

    // The value of `key`, or nothing when the database has no such key.
    std::optional<LmdbValue> find(std::string_view key);

    struct Entry {
        std::string key;
        LmdbValue value;
    };
    // The entry with the smallest / largest key, or nothing for an empty database.
    std::optional<Entry> first();
    std::optional<Entry> last();

  private:
    enum class Descend { by_key, first, last };
    struct Leaf {
        const std::byte* page;
        std::uint64_t number;
    };
    std::optional<Leaf> leaf_for(std::string_view key, Descend how);
    const std::byte* checked_page(std::uint64_t number, bool as_root);
    void check_page(const std::byte* page, std::uint64_t number, bool as_root) const;
    LmdbValue value_of(const std::byte* page, std::uint64_t number, unsigned index);
    Entry entry_at(const Leaf& leaf, unsigned index);
    [[noreturn]] void damaged(std::uint64_t page, const std::string& what) const;

    LmdbMeta meta_;
    PageReader read_page_;
    std::string dataset_;
    std::unordered_set<std::uint64_t> checked_;
};

} // namespace loaderlens::probes
