// ResidencySampler over forked children that map a file and touch known pages: a process's present
// pages of the file, per bucket of file offsets, with each way of reading the kernel forced: both
// page-cache methods (cachestat, mincore) and both pagemap readers (PAGEMAP_SCAN, 8-byte entries).
//
// Known pages: after DONTNEED, a fault through a MADV_RANDOM mapping reads and maps exactly the
// faulting page (order-0 folio, no readahead), and fault-around only maps pages already cached, so
// a child that touches N pages of a cold file has exactly N present. Children that must not see
// each other's pages touch pages in different 64 KiB (fault-around) windows. On a warm file
// (large folios) a fault may map more than the page: the bound is then the union of the touched
// pages' 64 KiB and 2 MiB windows.
#include "loaderlens/residency_sampler.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <poll.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
namespace tt = boost::test_tools;
using namespace std::chrono_literals;

using namespace loaderlens::test::residency;

namespace {

constexpr std::uint64_t two_mib = 2 << 20;
constexpr std::int64_t file_pages = 16384; // 64 MiB: 256 buckets of 64 pages

// A forked copy of the test process that runs `body`, which talks with the test in lines over two
// pipes (send/receive work on both sides). Killed when the object goes.
class Forked {
  public:
    explicit Forked(const std::function<void(Forked&)>& body) {
        int down[2], up[2];
        if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
            throw std::runtime_error("pipe failed");
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::close(down[1]);
            ::close(up[0]);
            in_ = down[0];
            out_ = up[1];
            try {
                body(*this);
            } catch (...) {
            }
            ::_exit(0);
        }
        ::close(down[0]);
        ::close(up[1]);
        in_ = up[0];
        out_ = down[1];
    }
    ~Forked() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        ::close(in_);
        ::close(out_);
    }
    Forked(const Forked&) = delete;
    Forked& operator=(const Forked&) = delete;
    pid_t pid() const { return pid_; }

    void send(const std::string& line) {
        const std::string text = line + "\n";
        const ssize_t ignored = ::write(out_, text.data(), text.size()); // < PIPE_BUF: atomic
        (void)ignored;
    }
    // The next line; empty on timeout or EOF.
    std::string receive(std::chrono::milliseconds timeout = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto eol = buffer_.find('\n'); eol != std::string::npos) {
                std::string line = buffer_.substr(0, eol);
                buffer_.erase(0, eol + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return {};
            pollfd pfd{in_, POLLIN, 0};
            if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
            char chunk[4096];
            const ssize_t n = ::read(in_, chunk, sizeof chunk);
            if (n <= 0) return {};
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

  private:
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1;
    std::string buffer_;
};

struct MapSpec {
    std::string path;
    std::uint64_t offset = 0, length = 0;
    int advice = MADV_RANDOM;
    int prot = PROT_READ;
    int flags = MAP_SHARED;
    bool align_2mib = false; // map at a 2 MiB aligned address
};
struct Touch {
    std::size_t mapping;
    std::int64_t page; // inside that mapping
    bool write = false;
};

// A child that maps as `specs` say, reads a byte of each touched page, says "ready ADDR..." and
// then obeys "unmap I" (answers "done") until it is killed.
std::unique_ptr<Forked> start_mapper(std::vector<MapSpec> specs, std::vector<Touch> touches,
                                     std::vector<std::uint64_t>* addresses = nullptr) {
    auto child = std::make_unique<Forked>([=](Forked& self) {
        std::vector<char*> bases;
        for (const MapSpec& s : specs) {
            const int fd = ::open(s.path.c_str(), O_RDONLY);
            void* hint = nullptr;
            int flags = s.flags;
            if (s.align_2mib) {
                void* reserved = ::mmap(nullptr, s.length + two_mib, PROT_NONE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                hint = reinterpret_cast<void*>(
                    (reinterpret_cast<std::uint64_t>(reserved) + two_mib - 1) & ~(two_mib - 1));
                flags |= MAP_FIXED;
            }
            void* base = ::mmap(hint, s.length, s.prot, flags, fd, static_cast<off_t>(s.offset));
            if (base == MAP_FAILED || ::madvise(base, s.length, s.advice) != 0)
                return self.send(std::string("error ") + s.path + ": " + std::strerror(errno));
            ::close(fd);
            bases.push_back(static_cast<char*>(base));
        }
        unsigned sum = 0;
        for (const Touch& t : touches) {
            auto* byte =
                reinterpret_cast<volatile unsigned char*>(bases[t.mapping] + t.page * page_size());
            if (t.write) *byte = 1;
            sum += *byte;
        }
        std::string ready = "ready " + std::to_string(sum);
        for (char* base : bases)
            ready += " " + std::to_string(reinterpret_cast<std::uint64_t>(base));
        self.send(ready);
        for (;;) {
            const std::string command = self.receive(120s);
            if (!command.starts_with("unmap ")) return;
            const auto i = std::stoul(command.substr(6));
            ::munmap(bases[i], specs[i].length);
            self.send("done");
        }
    });
    const std::string line = child->receive();
    BOOST_REQUIRE_MESSAGE(line.starts_with("ready "), "the child said '" << line << "'");
    std::istringstream in(line.substr(6));
    std::uint64_t ignored, address;
    in >> ignored;
    while (addresses && in >> address)
        addresses->push_back(address);
    return child;
}

ProcessInfo process(std::int64_t id, pid_t pid) {
    ProcessInfo info;
    info.id = id;
    info.key.pid = pid;
    return info;
}

// The sampler and what it has said so far.
struct Follower {
    ResidencySampler sampler;
    std::map<std::uint64_t, ResidencyFile> files; // by inode, as first reported
    ResidencySample last;
    Problems problems;

    explicit Follower(ResidencyOptions options = {}) : sampler(std::move(options)) {}
    void sample(const std::vector<ProcessInfo>& live) {
        last = {};
        sampler.sample(live, last, problems);
        for (const ResidencyFile& f : last.new_files)
            files[f.inode] = f;
    }
    const ResidencyFile* file(const std::string& path) const {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return nullptr;
        auto it = files.find(st.st_ino);
        return it == files.end() ? nullptr : &it->second;
    }
    std::vector<MappedResidency> rows(std::int64_t file_id, std::int64_t process_id) const {
        std::vector<MappedResidency> out;
        for (const MappedResidency& row : last.mapped)
            if (row.file_id == file_id && row.process_id == process_id) out.push_back(row);
        return out;
    }
    const CacheResidency* cache(std::int64_t file_id) const {
        for (const CacheResidency& c : last.cache)
            if (c.file_id == file_id) return &c;
        return nullptr;
    }
};

// The one row of (file, process): these pages present, per bucket, `mapped` pages mapped.
void check_present(const Follower& f, const ResidencyFile& file, std::int64_t process_id,
                   const std::set<std::int64_t>& pages, std::int64_t mapped) {
    const auto rows = f.rows(file.id, process_id);
    BOOST_REQUIRE_EQUAL(rows.size(), 1u);
    const MappedResidency& row = rows.front();
    BOOST_TEST(row.present_pages == static_cast<std::int64_t>(pages.size()));
    BOOST_TEST(row.mapped_pages == mapped);
    BOOST_TEST(sum(row.buckets) == row.present_pages);
    BOOST_TEST(row.buckets == buckets_of(file.layout, pages), tt::per_element());
}

// Runs `check` once per way of reading the kernel (both page-cache methods, both pagemap readers,
// each forced), each time with a Follower of its own that has sampled `live` once, after checking
// that it used the methods this kernel offers for what was asked.
void for_each_method(const std::vector<ProcessInfo>& live,
                     const std::function<void(Follower&)>& check,
                     const ResidencyOptions& base = {}) {
    for (const Methods& m : all_methods()) {
        BOOST_TEST_CONTEXT(m.name()) {
            Follower f(m.options(base));
            f.sample(live);
            BOOST_TEST(f.sampler.pagemap_method() == expected_pagemap_method(m.pagemap_scan));
            for (const auto& [inode, file] : f.files)
                if (file.method != CacheMethod::unavailable)
                    BOOST_TEST(std::string(to_string(file.method)) ==
                               to_string(expected_cache_method(m.cache)));
            check(f);
        }
    }
}

struct DataFile { // 64 MiB, cold
    TempDir dir;
    std::string path = dir.file("data.bin");
    DataFile() {
        make_file(path, static_cast<std::size_t>(file_pages * page_size()));
        make_cold(path);
    }
};

std::vector<Touch> touches_of(std::size_t mapping, const std::set<std::int64_t>& pages,
                              std::int64_t first_page = 0) {
    std::vector<Touch> out;
    for (std::int64_t page : pages)
        out.push_back({mapping, page - first_page});
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency)

BOOST_AUTO_TEST_CASE(cold_file_random_advice_present_is_the_touched_pages) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    std::set<std::int64_t> touched{0, 1, 2, 63, 64, 100, 1000, 4096, 8191, 12000, 16383};
    for (std::int64_t p = 2000; p < 2600; p += 2) // 300 runs: more than one PAGEMAP_SCAN vector
        touched.insert(p);
    auto child = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, touched));
    const std::vector<ProcessInfo> live{process(7, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        BOOST_TEST(file->layout.bucket_pages == 64);
        BOOST_TEST(!file->requested);
        BOOST_TEST(f.problems.empty());
        check_present(f, *file, 7, touched, file_pages);
        const CacheResidency* cache = f.cache(file->id);
        BOOST_REQUIRE(cache);
        BOOST_TEST(cache->totals.cached == static_cast<std::int64_t>(touched.size()));
        BOOST_TEST(cache->buckets == buckets_of(file->layout, touched), tt::per_element());
    });
}

BOOST_AUTO_TEST_CASE(warm_file_present_within_fault_around_and_folio_windows) {
    DataFile data;
    // Cold, then read sequentially: readahead's large folios. DAMON may page some out again (it
    // pages out idle physical memory every 5 s): the bound below holds all the same (a fault reads
    // a missing page into a folio inside its 2 MiB window), only less tightly.
    std::int64_t cached = 0;
    for (int attempt = 0; attempt < 3 && cached != file_pages; ++attempt) {
        read_all(data.path);
        cached = cached_pages(data.path);
    }
    BOOST_TEST_MESSAGE("warm file: " << cached << " of " << file_pages << " pages cached");
    const std::set<std::int64_t> touched{0, 17, 1000, 4095, 4096, 8200, 12345, 16383};
    std::vector<std::uint64_t> addresses;
    auto child = start_mapper({{.path = data.path,
                                .length = static_cast<std::uint64_t>(file_pages * page_size()),
                                .advice = MADV_NORMAL,
                                .align_2mib = true}},
                              touches_of(0, touched), &addresses);
    BOOST_REQUIRE_EQUAL(addresses.size(), 1u);
    BOOST_REQUIRE_EQUAL(addresses[0] % two_mib, 0u); // so file and VA windows coincide
    // Upper bound: each touched page's 64 KiB fault-around window and 2 MiB folio window (every
    // page of the file is cached, so nothing is clipped).
    const std::int64_t around = 65536 / page_size(), folio = two_mib / page_size();
    std::set<std::int64_t> bound;
    for (std::int64_t p : touched)
        for (std::int64_t window : {around, folio})
            for (std::int64_t q = p / window * window; q < (p / window + 1) * window; ++q)
                if (q < file_pages) bound.insert(q);

    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        const auto rows = f.rows(file->id, 1);
        BOOST_REQUIRE_EQUAL(rows.size(), 1u);
        const MappedResidency& row = rows.front();
        BOOST_TEST_MESSAGE("warm file: " << touched.size() << " pages touched, "
                                         << row.present_pages << " present, bound "
                                         << bound.size());
        BOOST_TEST(row.present_pages >= static_cast<std::int64_t>(touched.size()));
        BOOST_TEST(row.present_pages <= static_cast<std::int64_t>(bound.size()));
        BOOST_TEST(sum(row.buckets) == row.present_pages);
        BOOST_TEST(row.mapped_pages == file_pages);
        const BucketCounts least = buckets_of(file->layout, touched),
                           most = buckets_of(file->layout, bound);
        for (int b = 0; b < file->layout.count; ++b) {
            const auto i = static_cast<std::size_t>(b);
            BOOST_TEST_CONTEXT("bucket " << b) {
                BOOST_TEST(row.buckets[i] >= least[i]);
                BOOST_TEST(row.buckets[i] <= most[i]);
            }
        }
    });
}

BOOST_AUTO_TEST_CASE(two_children_each_see_their_own_pages) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    // Different 64 KiB windows (16 pages): neither child's fault-around maps the other's pages.
    std::set<std::int64_t> first, second;
    for (std::int64_t i = 0; i < 20; ++i) {
        first.insert(i * 800 + 3);
        second.insert(i * 800 + 400);
    }
    auto a = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, first));
    auto b = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, second));
    const std::vector<ProcessInfo> live{process(1, a->pid()), process(2, b->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        BOOST_TEST_CONTEXT("first child") {
            check_present(f, *file, 1, first, file_pages);
        }
        BOOST_TEST_CONTEXT("second child") {
            check_present(f, *file, 2, second, file_pages);
        }
        BOOST_REQUIRE(f.cache(file->id));
        BOOST_TEST(f.cache(file->id)->totals.cached == 40);
    });
}

BOOST_AUTO_TEST_CASE(a_file_mapped_twice_counts_each_page_once) {
    DataFile data;
    const std::uint64_t half = file_pages / 2 * page_size(), quarter = half / 2;
    const std::int64_t second_first_page = file_pages / 4; // second mapping: pages [4096, 12288)
    // Page 5000 is touched through both mappings; the others through one.
    std::vector<Touch> touches{{0, 10}, {0, 5000}, {0, 6000}};
    for (std::int64_t p : {5000, 6100, 10000})
        touches.push_back({1, p - second_first_page});
    auto child = start_mapper({{.path = data.path, .length = half},
                               {.path = data.path, .offset = quarter, .length = half}},
                              touches);
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        check_present(f, *file, 1, {10, 5000, 6000, 6100, 10000}, 3 * file_pages / 4);
    });
}

BOOST_AUTO_TEST_CASE(a_private_copy_of_a_page_is_not_a_file_page) {
    DataFile data;
    // Page 2 is read, then written through the private mapping: the process now maps an anonymous
    // copy of it, which is not the file's page.
    auto child = start_mapper({{.path = data.path,
                                .length = static_cast<std::uint64_t>(file_pages * page_size()),
                                .prot = PROT_READ | PROT_WRITE,
                                .flags = MAP_PRIVATE}},
                              {{0, 1}, {0, 2}, {0, 3}, {0, 2, true}});
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        check_present(f, *file, 1, {1, 3}, file_pages);
    });
}

BOOST_AUTO_TEST_CASE(a_mapping_at_a_file_offset_counts_in_the_file_buckets) {
    DataFile data;
    const std::int64_t at = 5120, tail = 15360; // 20 MiB in; the last 4 MiB
    const std::uint64_t eight_mib = 2048 * page_size();
    // The second mapping is 8 MiB long but only 4 MiB of the file is there: mapped is clipped.
    std::vector<Touch> touches = touches_of(0, {5120, 5183, 5184, 6120, 7167}, at);
    touches.push_back({1, 16383 - tail});
    auto child = start_mapper({{.path = data.path,
                                .offset = static_cast<std::uint64_t>(at * page_size()),
                                .length = eight_mib},
                               {.path = data.path,
                                .offset = static_cast<std::uint64_t>(tail * page_size()),
                                .length = eight_mib}},
                              touches);
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        // Buckets of 64 pages: 80, 80, 81, 95, 111 and 255.
        check_present(f, *file, 1, {5120, 5183, 5184, 6120, 7167, 16383}, 2048 + 1024);
    });
}

BOOST_AUTO_TEST_CASE(after_munmap_one_zero_row_then_none) {
    DataFile data;
    for (const Methods& m : all_methods()) {
        BOOST_TEST_CONTEXT(m.name()) {
            auto child =
                start_mapper({{.path = data.path,
                               .length = static_cast<std::uint64_t>(file_pages * page_size())}},
                             touches_of(0, {5, 500, 5000}));
            Follower f(m.options());
            const std::vector<ProcessInfo> live{process(3, child->pid())};
            f.sample(live);
            const ResidencyFile* file = f.file(data.path);
            BOOST_REQUIRE(file);
            check_present(f, *file, 3, {5, 500, 5000}, file_pages);

            child->send("unmap 0");
            BOOST_REQUIRE_EQUAL(child->receive(), "done");
            f.sample(live);
            const auto rows = f.rows(file->id, 3);
            BOOST_REQUIRE_EQUAL(rows.size(), 1u);
            BOOST_TEST(rows[0].present_pages == 0);
            BOOST_TEST(rows[0].mapped_pages == 0);
            BOOST_TEST(rows[0].buckets ==
                           BucketCounts(static_cast<std::size_t>(file->layout.count), 0),
                       tt::per_element());
            BOOST_TEST(f.cache(file->id) != nullptr); // the page cache is still followed

            f.sample(live);
            BOOST_TEST(f.rows(file->id, 3).size() == 0u);
            BOOST_TEST(f.problems.empty());
            BOOST_TEST(f.sampler.pagemap_method() == expected_pagemap_method(m.pagemap_scan));
        }
    }
}

BOOST_AUTO_TEST_CASE(which_files_are_followed) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), small = dir.file("small.bin"),
                      code = dir.file("code.bin"), asked = dir.file("asked.bin"),
                      missing = dir.file("missing.bin");
    make_file(data, 4 << 20);
    make_file(small, 512 << 10); // under the 1 MiB minimum
    make_file(code, 4 << 20);
    make_file(asked, 2 << 20);
    make_cold(asked); // and stays so: nothing reads it
    auto child = start_mapper(
        {{.path = data, .length = 4 << 20},
         {.path = small, .length = 512 << 10},
         {.path = code, .length = 4 << 20, .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE}},
        {{0, 1}, {1, 1}, {2, 1}});
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    const auto check = [&](Follower& f) {
        BOOST_TEST(f.problems.empty());
        BOOST_TEST(f.file(small) == nullptr);
        BOOST_TEST(f.file(code) == nullptr);
        const ResidencyFile* followed = f.file(data);
        BOOST_REQUIRE(followed);
        BOOST_TEST(!followed->requested);
        BOOST_TEST(f.rows(followed->id, 1).size() == 1u);
        const ResidencyFile* requested = f.file(asked);
        BOOST_REQUIRE(requested);
        BOOST_TEST(requested->requested);
        BOOST_TEST(f.rows(requested->id, 1).empty());
        BOOST_REQUIRE(f.cache(requested->id));
        BOOST_TEST(f.cache(requested->id)->totals.cached == 0);
        BOOST_TEST(f.cache(requested->id)->buckets.size() ==
                   static_cast<std::size_t>(requested->layout.count));
        const ResidencyFile* gone = nullptr;
        for (const auto& [inode, file] : f.files)
            if (file.path == missing) gone = &file;
        BOOST_REQUIRE(gone);
        BOOST_TEST(std::string(to_string(gone->method)) == "unavailable");
        BOOST_TEST(gone->unavailable_reason.starts_with("cannot open " + missing),
                   "reason: " << gone->unavailable_reason);
    };
    // (for_each_method checks the method of every file read: the requested one included.)
    for_each_method(live, check, ResidencyOptions{.files = {asked, missing}});
}

BOOST_AUTO_TEST_SUITE_END()
