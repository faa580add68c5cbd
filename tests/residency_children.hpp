// SPDX-License-Identifier: MIT
// Helpers of test_residency_process.cpp: forked children that map files and touch known pages, and
// a ResidencySampler that follows them, run once per way of reading the kernel.
#pragma once

#include "loaderlens/residency_sampler.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <poll.h>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace loaderlens::test::residency {

namespace tt = boost::test_tools;
using namespace std::chrono_literals;

inline constexpr std::uint64_t two_mib = 2 << 20;
inline constexpr std::int64_t file_pages = 16384; // 64 MiB: 256 buckets of 64 pages

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
inline std::unique_ptr<Forked> start_mapper(std::vector<MapSpec> specs, std::vector<Touch> touches,
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

inline ProcessInfo process(std::int64_t id, pid_t pid) {
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
inline void check_present(const Follower& f, const ResidencyFile& file, std::int64_t process_id,
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
inline void for_each_method(const std::vector<ProcessInfo>& live,
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

inline std::vector<Touch> touches_of(std::size_t mapping, const std::set<std::int64_t>& pages,
                                     std::int64_t first_page = 0) {
    std::vector<Touch> out;
    for (std::int64_t page : pages)
        out.push_back({mapping, page - first_page});
    return out;
}

} // namespace loaderlens::test::residency
