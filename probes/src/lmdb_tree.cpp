// SPDX-License-Identifier: MIT
#include "lmdb_tree.hpp"

#include "loaderlens/probes/dataset.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

static_assert(sizeof(std::size_t) == 8, "LMDB's layout here is the 64-bit one (8-byte pgno_t)");

// mdb.c: MDB_page header, MDB_meta (after the header), MDB_db, MDB_node.
constexpr std::size_t page_header = 16; // PAGEHDRSZ: pgno, pad, flags, lower, upper
constexpr std::size_t at_flags = 10, at_lower = 12, at_upper = 14, at_overflow_pages = 12;
constexpr std::size_t meta_bytes = page_header + 136; // the header and MDB_meta
constexpr std::size_t at_magic = 16, at_version = 20, at_page_size = 40;
constexpr std::size_t main_db = 88; // mm_dbs[MAIN_DBI]
constexpr std::size_t at_db_flags = 4, at_db_entries = 32, at_db_root = 40;
constexpr std::size_t at_last_page = 136, at_txnid = 144;
constexpr std::size_t node_header = 8; // NODESIZE: lo, hi, flags, ksize
constexpr std::uint32_t lmdb_magic = 0xBEEFC0DE, lmdb_data_version = 1;
constexpr std::uint16_t p_branch = 0x01, p_leaf = 0x02, p_overflow = 0x04, p_meta = 0x08;
// Bits LMDB uses only in memory (a dirty or loose page); harmless if a page was written with them.
constexpr std::uint16_t p_in_memory = 0x10 | 0x4000 | 0x8000;
constexpr std::uint16_t f_bigdata = 0x01, f_subdata = 0x02;
constexpr std::uint64_t first_data_page = 2; // after the two meta pages
constexpr int cursor_stack = 32;             // CURSOR_STACK: LMDB's deepest tree

// Unaligned little-endian reads (pages are byte buffers; UBSan rejects misaligned loads).
template <typename T> T load(const std::byte* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

std::string hex(unsigned value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%x", value);
    return text;
}

std::array<std::byte, meta_bytes> read_meta_page(int fd, std::uint64_t offset,
                                                 const std::string& dataset) {
    std::array<std::byte, meta_bytes> bytes{};
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done,
                                  static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw DatasetError(dataset + ": cannot read data.mdb: " + std::strerror(errno));
        if (n == 0) throw DatasetDamage(dataset, "data.mdb shrank while being read");
        done += static_cast<std::size_t>(n);
    }
    return bytes;
}

void check_meta_page(const std::array<std::byte, meta_bytes>& page, int which,
                     const std::string& dataset) {
    const std::string name = "page " + std::to_string(which) + " of data.mdb";
    if (!(load<std::uint16_t>(page.data() + at_flags) & p_meta) ||
        load<std::uint32_t>(page.data() + at_magic) != lmdb_magic)
        throw DatasetError(dataset + ": not an LMDB environment (" + name +
                           " is not an LMDB meta page)");
    if (const auto version = load<std::uint32_t>(page.data() + at_version);
        version != lmdb_data_version)
        throw DatasetError(dataset + ": LMDB data format version " + std::to_string(version) +
                           " in " + name + " (this LMDB reads version 1)");
}

bool power_of_two(std::uint32_t value) {
    return value != 0 && (value & (value - 1)) == 0;
}

} // namespace

LmdbMeta read_lmdb_meta(int fd, std::int64_t file_size, const std::string& dataset) {
    if (file_size < static_cast<std::int64_t>(meta_bytes))
        throw DatasetDamage(dataset, "not an LMDB environment: data.mdb has " +
                                         std::to_string(file_size) +
                                         " bytes, less than one meta page");
    const auto first = read_meta_page(fd, 0, dataset);
    check_meta_page(first, 0, dataset);
    const auto page_size = load<std::uint32_t>(first.data() + at_page_size);
    // LMDB creates pages of the OS page size, at most 32 KiB (MAX_PAGESIZE).
    if (!power_of_two(page_size) || page_size < 512 || page_size > 0x8000)
        throw DatasetDamage(dataset, "damaged LMDB meta page 0: page size " +
                                         std::to_string(page_size) +
                                         " (LMDB uses a power of two from 512 to 32768)");
    if (file_size < 2 * static_cast<std::int64_t>(page_size))
        throw DatasetDamage(dataset, "truncated: data.mdb has " + std::to_string(file_size) +
                                         " bytes, less than its two meta pages of " +
                                         std::to_string(page_size));
    const auto second = read_meta_page(fd, page_size, dataset);
    check_meta_page(second, 1, dataset);
    if (load<std::uint32_t>(second.data() + at_page_size) != page_size)
        throw DatasetDamage(
            dataset, "damaged LMDB meta pages: their page sizes differ (" +
                         std::to_string(page_size) + " and " +
                         std::to_string(load<std::uint32_t>(second.data() + at_page_size)) + ")");
    // mdb_env_pick_meta: the second only if its transaction id is larger.
    const bool use_second = load<std::uint64_t>(first.data() + at_txnid) <
                            load<std::uint64_t>(second.data() + at_txnid);
    const std::byte* meta = use_second ? second.data() : first.data();
    const std::string which = std::string("LMDB meta page ") + (use_second ? "1" : "0");

    LmdbMeta result;
    result.page_size = page_size;
    result.last_page = load<std::uint64_t>(meta + at_last_page);
    result.root = load<std::uint64_t>(meta + main_db + at_db_root);
    result.entries = load<std::uint64_t>(meta + main_db + at_db_entries);
    const std::uint64_t file_pages = static_cast<std::uint64_t>(file_size) / page_size;
    if (result.last_page < 1)
        throw DatasetDamage(dataset, "damaged " + which + ": no page in use after it");
    if (result.last_page >= file_pages)
        throw DatasetDamage(dataset, "truncated: data.mdb has " + std::to_string(file_size) +
                                         " bytes (" + std::to_string(file_pages) + " pages of " +
                                         std::to_string(page_size) + "), its " + which + " has " +
                                         (result.last_page < (std::uint64_t{1} << 48)
                                              ? std::to_string(result.last_page + 1)
                                              : std::string("an implausible number of")) +
                                         " pages in use");
    if (const auto flags = load<std::uint16_t>(meta + main_db + at_db_flags); flags != 0)
        throw DatasetError(dataset + ": the main LMDB database has flags " + hex(flags) +
                           " (duplicate, integer or reverse keys): the loader reads plain "
                           "key -> value records");
    if (result.root != LmdbMeta::no_root &&
        (result.root < first_data_page || result.root > result.last_page))
        throw DatasetDamage(dataset, "damaged " + which + ": its root page " +
                                         std::to_string(result.root) + " is not among the " +
                                         std::to_string(result.last_page + 1) + " pages in use");
    return result;
}

LmdbTree::LmdbTree(const LmdbMeta& meta, PageReader read_page, std::string dataset)
    : meta_(meta), read_page_(std::move(read_page)), dataset_(std::move(dataset)) {}

void LmdbTree::damaged(std::uint64_t page, const std::string& what) const {
    throw DatasetDamage(dataset_, "damaged LMDB page " + std::to_string(page) + ": " + what);
}

namespace {

struct Node {
    std::size_t offset;          // in the page
    std::uint16_t lo, hi, flags; // data size (leaf) or child page (branch, with flags)
    std::uint16_t key_size;
    std::uint64_t data_size() const { return lo | std::uint64_t{hi} << 16; }
    std::uint64_t child() const {
        return lo | std::uint64_t{hi} << 16 | std::uint64_t{flags} << 32; // NODEPGNO
    }
};

unsigned key_count(const std::byte* page) {
    return (load<std::uint16_t>(page + at_lower) - page_header) >> 1; // NUMKEYS
}

bool is_branch(const std::byte* page) {
    return load<std::uint16_t>(page + at_flags) & p_branch;
}

// Only for checked pages (the offsets are inside the page).
Node node_at(const std::byte* page, unsigned index) {
    const std::size_t offset = load<std::uint16_t>(page + page_header + 2 * index);
    return {offset, load<std::uint16_t>(page + offset), load<std::uint16_t>(page + offset + 2),
            load<std::uint16_t>(page + offset + 4), load<std::uint16_t>(page + offset + 6)};
}

std::string_view key_of(const std::byte* page, const Node& node) {
    return {reinterpret_cast<const char*>(page + node.offset + node_header), node.key_size};
}

// mdb_cmp_memn, LMDB's default key order: bytes, then the shorter first.
int compare(std::string_view a, std::string_view b) {
    const int diff = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
    if (diff != 0) return diff;
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

struct Search {
    unsigned index; // >= key_count: no key is >= the one searched
    bool exact;
};

// mdb_node_search, step for step (so that LMDB takes the path checked here).
Search node_search(const std::byte* page, std::string_view key) {
    const unsigned keys = key_count(page);
    int low = is_branch(page) ? 1 : 0, high = static_cast<int>(keys) - 1;
    unsigned index = 0;
    int result = 0;
    while (low <= high) {
        index = static_cast<unsigned>((low + high) >> 1);
        result = compare(key, key_of(page, node_at(page, index)));
        if (result == 0) break;
        if (result > 0)
            low = static_cast<int>(index) + 1;
        else
            high = static_cast<int>(index) - 1;
    }
    if (result > 0) ++index;
    return {index, result == 0 && keys > 0};
}

} // namespace

void LmdbTree::check_page(const std::byte* page, std::uint64_t number, bool as_root) const {
    const std::uint32_t size = meta_.page_size;
    if (load<std::uint64_t>(page) != number)
        damaged(number, "its header names page " + std::to_string(load<std::uint64_t>(page)));
    const auto kind =
        static_cast<std::uint16_t>(load<std::uint16_t>(page + at_flags) & ~p_in_memory);
    if (kind != p_branch && kind != p_leaf)
        damaged(number, "not a branch or leaf page (flags " + hex(kind) + ")");
    const unsigned lower = load<std::uint16_t>(page + at_lower);
    const unsigned upper = load<std::uint16_t>(page + at_upper);
    if (lower < page_header || (lower - page_header) % 2 != 0 || lower > upper || upper > size)
        damaged(number, "free space bounds " + std::to_string(lower) + ".." +
                            std::to_string(upper) + " in a page of " + std::to_string(size));
    const unsigned keys = key_count(page);
    const bool branch = kind == p_branch;
    // mdb_page_search_root asserts (abort) on a branch page of the main database with one key.
    if (branch && keys < 2) damaged(number, "a branch page with " + std::to_string(keys) + " key");
    if (!branch && keys == 0 && !as_root) damaged(number, "an empty leaf page below the root");
    for (unsigned i = 0; i < keys; ++i) {
        const std::size_t offset = load<std::uint16_t>(page + page_header + 2 * i);
        const std::string node = "node " + std::to_string(i);
        if (offset < upper || offset + node_header > size)
            damaged(number, node + " at offset " + std::to_string(offset) +
                                " is outside the page's node area");
        const Node n = node_at(page, i);
        const std::size_t key_end = offset + node_header + n.key_size;
        if (key_end > size) damaged(number, node + "'s key runs past the page");
        if (branch) {
            if (n.child() < first_data_page || n.child() > meta_.last_page)
                damaged(number, node + " points to page " + std::to_string(n.child()) +
                                    ", not among the " + std::to_string(meta_.pages_in_use()) +
                                    " pages in use");
            continue;
        }
        // A named database is a node of the main one: an environment, but not a dataset.
        if (n.flags == f_subdata)
            throw DatasetDamage(dataset_, "the LMDB environment holds named databases, not "
                                          "records (the loader reads the main database's "
                                          "key -> value records)");
        // F_DUPDATA would make mdb_get dereference the missing duplicate cursor.
        if (n.flags & ~f_bigdata)
            damaged(number, node + " has flags " + hex(n.flags) +
                                " (a sub-database or duplicates, not a record)");
        if (!(n.flags & f_bigdata)) {
            if (key_end + n.data_size() > size)
                damaged(number, node + "'s value runs past the page");
            continue;
        }
        if (key_end + sizeof(std::uint64_t) > size)
            damaged(number, node + "'s overflow page number runs past the page");
        const auto overflow = load<std::uint64_t>(page + key_end);
        // OVPAGES: the header and the value, in whole pages.
        const std::uint64_t pages = (page_header - 1 + n.data_size()) / size + 1;
        if (overflow < first_data_page || overflow > meta_.last_page ||
            pages > meta_.last_page - overflow + 1)
            damaged(number, node + "'s value (" + std::to_string(n.data_size()) +
                                " bytes from page " + std::to_string(overflow) +
                                ") is not among the " + std::to_string(meta_.pages_in_use()) +
                                " pages in use");
    }
}

const std::byte* LmdbTree::checked_page(std::uint64_t number, bool as_root) {
    if (number < first_data_page || number > meta_.last_page)
        damaged(number, "not among the " + std::to_string(meta_.pages_in_use()) + " pages in use");
    const std::byte* page = read_page_(number);
    if (!checked_.contains(number)) {
        check_page(page, number, as_root);
        checked_.insert(number);
    }
    return page;
}

std::optional<LmdbTree::Leaf> LmdbTree::leaf_for(std::string_view key, Descend how) {
    if (meta_.root == LmdbMeta::no_root) return std::nullopt;
    std::uint64_t number = meta_.root;
    const std::byte* page = checked_page(number, true);
    for (int depth = 1; is_branch(page); ++depth) {
        const unsigned keys = key_count(page);
        unsigned index = 0; // mdb_page_search_root
        if (how == Descend::last) {
            index = keys - 1;
        } else if (how == Descend::by_key) {
            const Search found = node_search(page, key);
            index = found.index >= keys ? keys - 1 : found.exact ? found.index : found.index - 1;
        }
        if (depth >= cursor_stack)
            damaged(number, "the tree is deeper than LMDB's " + std::to_string(cursor_stack) +
                                " levels (a page refers back to an ancestor?)");
        number = node_at(page, index).child();
        page = checked_page(number, false);
    }
    return Leaf{page, number};
}

LmdbValue LmdbTree::value_of(const std::byte* page, std::uint64_t number, unsigned index) {
    const Node node = node_at(page, index);
    const std::size_t key_end = node.offset + node_header + node.key_size;
    if (!(node.flags & f_bigdata)) return {number * meta_.page_size + key_end, node.data_size()};
    // The overflow pages were checked to be in use; their header is checked here, when the value
    // is read (checking every node's would read every overflow page).
    const auto overflow = load<std::uint64_t>(page + key_end);
    const std::byte* first = read_page_(overflow);
    const std::uint64_t pages = (page_header - 1 + node.data_size()) / meta_.page_size + 1;
    if (load<std::uint64_t>(first) != overflow ||
        !(load<std::uint16_t>(first + at_flags) & p_overflow) ||
        load<std::uint32_t>(first + at_overflow_pages) < pages)
        damaged(overflow, "not the overflow page of a " + std::to_string(node.data_size()) +
                              "-byte value (node " + std::to_string(index) + " of page " +
                              std::to_string(number) + ")");
    return {overflow * meta_.page_size + page_header, node.data_size()};
}

LmdbTree::Entry LmdbTree::entry_at(const Leaf& leaf, unsigned index) {
    return {std::string(key_of(leaf.page, node_at(leaf.page, index))),
            value_of(leaf.page, leaf.number, index)};
}

std::optional<LmdbValue> LmdbTree::find(std::string_view key) {
    const auto leaf = leaf_for(key, Descend::by_key);
    if (!leaf) return std::nullopt;
    const Search found = node_search(leaf->page, key);
    if (!found.exact) return std::nullopt;
    return value_of(leaf->page, leaf->number, found.index);
}

std::optional<LmdbTree::Entry> LmdbTree::first() {
    const auto leaf = leaf_for({}, Descend::first);
    if (!leaf || key_count(leaf->page) == 0) return std::nullopt;
    return entry_at(*leaf, 0);
}

std::optional<LmdbTree::Entry> LmdbTree::last() {
    const auto leaf = leaf_for({}, Descend::last);
    if (!leaf || key_count(leaf->page) == 0) return std::nullopt;
    return entry_at(*leaf, key_count(leaf->page) - 1);
}

} // namespace loaderlens::probes
