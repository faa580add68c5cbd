// SPDX-License-Identifier: MIT
// cgroup discovery and figures: against real cgroups made by the test (a parent with a limit and
// the process in an unlimited child, as SLURM and systemd arrange them; a member that faults a
// known amount of anonymous memory), for each hierarchy this machine has (v1 here; v2 where its
// memory controller is live), and the v2 parsing on a captured v2 tree (fixtures/cgroup_v2).
#include "cgroup_support.hpp"
#include "loaderlens/cgroup_sampler.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::cgroups;
namespace fs = std::filesystem;

namespace {

// Root, then the hierarchy: what a case needs to make cgroups of this version.
std::optional<Hierarchy> hierarchy(const std::string& version) {
    if (!precondition(::geteuid() == 0, "needs root to make cgroups", InCi::must_have)) return {};
    std::string why;
    auto found = version == "v2" ? memory_v2(why) : memory_v1(why);
    if (!precondition(found.has_value(), why, InCi::may_lack)) return {};
    return found;
}

std::string unique(const std::string& what) {
    return "loaderlens-" + what + "-" + std::to_string(::getpid());
}

void check_parent_limit(const Hierarchy& h) {
    TestCgroup parent(h.version, h.base, unique("limit"));
    BOOST_REQUIRE_MESSAGE(parent.problem().empty(), parent.problem());
    const std::int64_t limit_bytes = 512ll << 20;
    BOOST_REQUIRE_MESSAGE(parent.set_limit(limit_bytes), parent.problem());
    BOOST_REQUIRE_MESSAGE(parent.delegate_memory(), parent.problem()); // v2: "+memory" below it
    TestCgroup child(h.version, parent.dir(), "task");
    BOOST_REQUIRE_MESSAGE(child.problem().empty(), child.problem());

    ForkGuard member(fork_paused());
    BOOST_REQUIRE_MESSAGE(child.add(member.pid()), child.problem());

    std::string why;
    auto where = locate_memory_cgroup(member.pid(), &why);
    BOOST_REQUIRE_MESSAGE(where, why);
    BOOST_TEST(where->version == h.version);
    BOOST_TEST(fs::equivalent(where->directory, child.dir()));
    CgroupSample sample = read_cgroup(*where);
    BOOST_REQUIRE(sample.limit.has_value());
    BOOST_TEST(*sample.limit == limit_bytes / 1024);
    BOOST_TEST(!sample.unlimited);
}

// The sampler's figure and the kernel's file read just before and just after it. A cgroup's
// usage is not still while its members are: the kernel charges a CPU's pages in batches of 64
// (MEMCG_CHARGE_BATCH, 256 KiB), and another cgroup charging on that CPU drains the cached rest
// back, at any moment. With the cgroup tests running beside this one (ctest -j2), 3 of 150 runs
// read usage exactly 256 KiB apart from the kernel's file read a moment later.
struct BracketedFigure {
    std::optional<std::int64_t> sampler_kib, kernel_before_bytes, kernel_after_bytes;
    // The sampler read the kernel between the test's two reads: within their span, plus 16
    // pages of slack for the kernel's own bookkeeping (a KiB unit off by 2.4% would be 1.5 MiB).
    void check(const char* what) const {
        BOOST_REQUIRE(sampler_kib && kernel_before_bytes && kernel_after_bytes);
        const std::int64_t low = std::min(*kernel_before_bytes, *kernel_after_bytes) / 1024;
        const std::int64_t high = std::max(*kernel_before_bytes, *kernel_after_bytes) / 1024;
        constexpr std::int64_t slack_kib = 64;
        BOOST_TEST((*sampler_kib >= low - slack_kib && *sampler_kib <= high + slack_kib),
                   what << ": the sampler read " << *sampler_kib << " KiB, the kernel's file "
                        << low << "…" << high << " KiB");
    }
    std::int64_t growth_to(const BracketedFigure& later) const {
        BOOST_REQUIRE(sampler_kib && later.sampler_kib);
        return *later.sampler_kib - *sampler_kib;
    }
};

struct Bracketed {
    BracketedFigure usage, anon;
};

Bracketed read_bracketed(const TestCgroup& group, const CgroupLocation& where) {
    Bracketed out;
    out.usage.kernel_before_bytes = group.usage_bytes();
    out.anon.kernel_before_bytes = group.anon_bytes();
    const CgroupSample sample = read_cgroup(where);
    out.usage.kernel_after_bytes = group.usage_bytes();
    out.anon.kernel_after_bytes = group.anon_bytes();
    out.usage.sampler_kib = sample.usage;
    out.anon.sampler_kib = sample.anon;
    return out;
}

// A child joins a test cgroup, then faults `mib` MiB of anonymous memory: the sampler's usage and
// anon grow by that much (±5%), and agree with the kernel's files read here.
void check_usage_growth(const Hierarchy& h) {
    constexpr std::int64_t mib = 64;
    TestCgroup group(h.version, h.base, unique("usage"));
    BOOST_REQUIRE_MESSAGE(group.problem().empty(), group.problem());
    int go[2], done[2];
    BOOST_REQUIRE(::pipe2(go, O_CLOEXEC) == 0 && ::pipe2(done, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        char byte;
        if (::read(go[0], &byte, 1) != 1) ::_exit(2);
        const std::size_t bytes = static_cast<std::size_t>(mib) << 20;
        auto* memory = static_cast<char*>(
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (memory == MAP_FAILED) ::_exit(3);
        for (std::size_t i = 0; i < bytes; i += 4096)
            memory[i] = 1;
        if (::write(done[1], "d", 1) != 1) ::_exit(4);
        ::pause();
        ::_exit(0);
    }
    ForkGuard member(pid);
    ::close(go[0]);
    ::close(done[1]);
    BOOST_REQUIRE_MESSAGE(group.add(pid), group.problem());

    std::string why;
    auto where = locate_memory_cgroup(pid, &why);
    BOOST_REQUIRE_MESSAGE(where, why);
    BOOST_REQUIRE_EQUAL(where->version, h.version);
    BOOST_REQUIRE(fs::equivalent(where->directory, group.dir()));
    const Bracketed before = read_bracketed(group, *where);

    BOOST_REQUIRE(::write(go[1], "g", 1) == 1);
    pollfd pfd{done[0], POLLIN, 0};
    char byte = 0;
    BOOST_REQUIRE_MESSAGE(::poll(&pfd, 1, 30'000) == 1 && ::read(done[0], &byte, 1) == 1,
                          "the member did not fault its memory");
    const Bracketed after = read_bracketed(group, *where);
    ::close(go[1]);
    ::close(done[0]);

    const std::int64_t expected_kib = mib * 1024;
    const std::int64_t usage_growth = before.usage.growth_to(after.usage);
    const std::int64_t anon_growth = before.anon.growth_to(after.anon);
    BOOST_TEST_MESSAGE(h.version << ": " << mib << " MiB faulted; usage +" << usage_growth
                                 << " KiB, anon +" << anon_growth << " KiB");
    BOOST_TEST(usage_growth >= expected_kib * 95 / 100);
    BOOST_TEST(usage_growth <= expected_kib * 105 / 100);
    BOOST_TEST(anon_growth >= expected_kib * 95 / 100);
    BOOST_TEST(anon_growth <= expected_kib * 105 / 100);
    before.usage.check("usage before");
    before.anon.check("anon before");
    after.usage.check("usage after");
    after.anon.check("anon after");
}

// The v2 fixture: a SLURM job's task cgroup (see fixtures/cgroup_v2/README.md).
const fs::path v2_root = fs::path(LOADERLENS_FIXTURES_DIR) / "cgroup_v2";
const std::string task_path = "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0";

CgroupLocation v2_location(const fs::path& root, const std::string& path,
                           const std::string& mount_relative = "") {
    const fs::path mount = mount_relative.empty() ? root : root / mount_relative;
    return CgroupLocation{"v2", path, (root / fs::path(path).relative_path()).string(),
                          mount.string()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(cgroup)

BOOST_AUTO_TEST_CASE(locates_our_own_memory_cgroup) {
    std::string why;
    auto where = locate_memory_cgroup(getpid(), &why);
    BOOST_REQUIRE_MESSAGE(where, why);
    BOOST_TEST((where->version == "v1" || where->version == "v2"));
    CgroupSample sample = read_cgroup(*where);
    BOOST_TEST(sample.usage.has_value());
    BOOST_TEST(*sample.usage > 0);
    BOOST_TEST((sample.limit.has_value() || sample.unlimited)); // a limit, or a known "no limit"
}

BOOST_AUTO_TEST_CASE(limit_of_a_parent_applies_to_an_unlimited_child_v1, *LOADERLENS_MAY_SKIP) {
    if (auto h = hierarchy("v1")) check_parent_limit(*h);
}

BOOST_AUTO_TEST_CASE(limit_of_a_parent_applies_to_an_unlimited_child_v2, *LOADERLENS_MAY_SKIP) {
    if (auto h = hierarchy("v2")) check_parent_limit(*h);
}

BOOST_AUTO_TEST_CASE(usage_and_anon_grow_by_what_a_member_faults_v1, *LOADERLENS_MAY_SKIP) {
    if (auto h = hierarchy("v1")) check_usage_growth(*h);
}

BOOST_AUTO_TEST_CASE(usage_and_anon_grow_by_what_a_member_faults_v2, *LOADERLENS_MAY_SKIP) {
    if (auto h = hierarchy("v2")) check_usage_growth(*h);
}

BOOST_AUTO_TEST_CASE(v2_files_of_a_slurm_task) {
    const CgroupSample s = read_cgroup(v2_location(v2_root, task_path));
    BOOST_TEST(s.version == "v2");
    BOOST_TEST(s.path == task_path);
    BOOST_TEST(s.usage.value_or(-1) == 1501564928 / 1024);
    BOOST_TEST(s.peak.value_or(-1) == 2013265920 / 1024);
    // task_0, user: max; step_0: 4 GiB; job_4242: 8 GiB; above: max. The smallest wins.
    BOOST_TEST(s.limit.value_or(-1) == 4ll << 20);
    BOOST_TEST(!s.unlimited);
    BOOST_TEST(s.anon.value_or(-1) == 734003200 / 1024);
    BOOST_TEST(s.file.value_or(-1) == 738197504 / 1024);
    BOOST_TEST(s.shmem.value_or(-1) == 134217728 / 1024);
    BOOST_TEST(s.file_mapped.value_or(-1) == 603979776 / 1024);
    BOOST_TEST(s.active_file.value_or(-1) == 402653184 / 1024);
    BOOST_TEST(s.inactive_file.value_or(-1) == 201326592 / 1024);
    BOOST_TEST(s.oom_kill.value_or(-1) == 2);
    BOOST_TEST(!s.failcnt.has_value()); // v1 only
}

BOOST_AUTO_TEST_CASE(v2_max_all_the_way_up_is_unlimited) {
    const CgroupSample s = read_cgroup(v2_location(v2_root, "/system.slice/other.service"));
    BOOST_TEST(!s.limit.has_value());
    BOOST_TEST(s.unlimited);
    BOOST_TEST(s.usage.value_or(-1) == 52690944 / 1024);
    BOOST_TEST(s.peak.value_or(-1) == 60817408 / 1024);
    BOOST_TEST(s.anon.value_or(-1) == 20971520 / 1024);
    BOOST_TEST(s.oom_kill.value_or(-1) == 0);
}

// The walk up for the effective limit stops at the hierarchy's root as mounted here: a container
// whose cgroup namespace starts at the job sees the step's limit; one that starts below the step
// sees none; nothing above the mount is read.
BOOST_AUTO_TEST_CASE(v2_limit_walk_stops_at_the_mount) {
    const std::string job = "system.slice/slurmstepd.scope/job_4242";
    BOOST_TEST(read_cgroup(v2_location(v2_root, task_path, job)).limit.value_or(-1) == 4ll << 20);
    const CgroupSample below = read_cgroup(v2_location(v2_root, task_path, job + "/step_0/user"));
    BOOST_TEST(!below.limit.has_value());
    BOOST_TEST(below.unlimited);

    TempDir dir; // a memory.max just above the mount must not count
    const fs::path mount = dir.path() / "cgroup";
    fs::copy(v2_root, mount, fs::copy_options::recursive);
    std::ofstream(dir.path() / "memory.max") << "1048576\n";
    const CgroupSample s = read_cgroup(v2_location(mount, task_path));
    BOOST_TEST(s.limit.value_or(-1) == 4ll << 20);
    // And the same tree with the step's limit lifted: the job's 8 GiB.
    std::ofstream(mount / job / "step_0" / "memory.max", std::ios::trunc) << "max\n";
    BOOST_TEST(read_cgroup(v2_location(mount, task_path)).limit.value_or(-1) == 8ll << 20);
}

BOOST_AUTO_TEST_SUITE_END()
